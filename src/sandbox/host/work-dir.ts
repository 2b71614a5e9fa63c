import { spawnSync } from "node:child_process";
import { chownSync, rmSync, writeFileSync } from "node:fs";
import { chmod, chown, mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";

import { ARTIFACTS_FOLDER, pathInsideWorkDir } from "../../core/data-files.js";

import { mountTmpfs, unmountLazily } from "./mounts.js";
import { tempDirPrefix } from "./temp-dirs.js";

/** A size-limited tmpfs to hold the work dir and /tmp of a run, and the tools to (un)mount it. */
export interface RunDisk {
  bytes: number;
  inodes: number;
  mount: string;
  umount: string;
}

/**
 * Work dirs not yet removed. A sandbox that is never closed leaves its pre-warmed interpreter's dir
 * behind when the process exits (the interpreter itself exits when its control pipe closes), so
 * whatever is left is removed on exit.
 */
const liveWorkDirs = new Map<string, RunDisk | null>();
process.once("exit", () => {
  for (const [path, disk] of liveWorkDirs) {
    // Lazy, because a process may still be dying in there; rm then only removes the mount point.
    if (disk) spawnSync(disk.umount, ["-l", path], { stdio: "ignore" });
    try {
      rmSync(path, { recursive: true, force: true });
    } catch {
      // The next selfheal process sweeps it (temp-dirs.ts).
    }
  }
});

/**
 * Emptied tmpfs mounts kept for the next runs, by mount options. Mounting and unmounting each run
 * costs two process starts, which on two cores slowed the run after it by ~3 ms; an emptied tmpfs
 * keeps nothing of the run before (its root is root's, and everything in it is removed).
 */
const idleMounts = new Map<string, string[]>();
const IDLE_MOUNTS_KEPT = 2;

/** Idle mounts serve runs of the same options in the same folder (a fork server's runs folder, or the temp dir). */
function idleKey(disk: RunDisk, parent: string | null): string {
  return `${parent ?? ""}|${mountOptions(disk)}`;
}

function mountOptions(disk: RunDisk): string {
  return `size=${disk.bytes},nr_inodes=${disk.inodes},mode=0755,nosuid,nodev`;
}

/**
 * The one writable directory of a run; the code and `request.files` are written here. With a
 * `RunDisk`, it and the run's /tmp live on one tmpfs of their own, bounded in bytes and inodes, so
 * a program that fills them gets ENOSPC and the host's disk never sees a byte.
 */
export class WorkDir {
  private constructor(
    /** The temp dir this run owns: the work dir itself, or the tmpfs mount point holding it. */
    private readonly root: string,
    readonly path: string,
    /** The run's /tmp on the same tmpfs; null without a `RunDisk` (the sandbox makes its own). */
    readonly tmpPath: string | null,
    /** Owner to give every file, when the program runs as a different uid than the host. */
    private readonly owner: { uid: number; gid: number } | null,
    private readonly disk: RunDisk | null,
    private readonly parent: string | null = null,
  ) {}

  static async create(
    owner: { uid: number; gid: number } | null = null,
    disk: RunDisk | null = null,
    /** The folder to make it in (a fork server's runs folder); the system's temp dir by default. */
    parent: string | null = null,
  ): Promise<WorkDir> {
    const reused = disk ? idleMounts.get(idleKey(disk, parent))?.pop() : undefined;
    if (disk && reused) return WorkDir.populate(reused, owner, disk, parent);
    const root = await mkdtemp(parent ? join(parent, "run-") : tempDirPrefix("run"));
    liveWorkDirs.set(root, null);
    if (!disk) {
      if (owner) await chown(root, owner.uid, owner.gid);
      return new WorkDir(root, root, null, owner, null);
    }
    try {
      await mountTmpfs(disk.mount, mountOptions(disk), root);
      liveWorkDirs.set(root, disk);
    } catch (error) {
      await new WorkDir(root, root, null, null, null).remove();
      throw error;
    }
    return WorkDir.populate(root, owner, disk, parent);
  }

  /** Makes the work dir and /tmp on a mounted, empty tmpfs. */
  private static async populate(
    root: string,
    owner: { uid: number; gid: number } | null,
    disk: RunDisk,
    parent: string | null,
  ): Promise<WorkDir> {
    try {
      const path = join(root, "work");
      const tmpPath = join(root, "tmp");
      await Promise.all([mkdir(path, { mode: 0o700 }), mkdir(tmpPath)]);
      // A sticky, world-writable /tmp as everywhere; only the run's uid exists in there anyway.
      await chmod(tmpPath, 0o1777);
      if (owner) await Promise.all([chown(path, owner.uid, owner.gid), chown(tmpPath, owner.uid, owner.gid)]);
      return new WorkDir(root, path, tmpPath, owner, disk, parent);
    } catch (error) {
      await new WorkDir(root, root, null, null, liveWorkDirs.get(root) ?? null).remove();
      throw error;
    }
  }

  /**
   * Writes `content` at a relative path inside the work dir; anything escaping it is refused. The
   * code and the files beside it are small text on the run's path: written synchronously they
   * cost ~0.1 ms, where the trips through libuv's thread pool (open, write, close, chown) took
   * ~0.9 ms of a pre-warmed run (`bench:sandbox`). Input files, which may be large, stay async.
   */
  async writeFile(name: string, content: string): Promise<void> {
    const target = await this.makeParent(name);
    writeFileSync(target, content);
    if (this.owner) chownSync(target, this.owner.uid, this.owner.gid);
  }

  /**
   * Writes an input file the program may read but not change: mode 0444, and, where the program
   * runs as a uid of its own, owned by us, so it cannot chmod it back either.
   */
  async writeInput(name: string, content: Uint8Array): Promise<void> {
    const target = await this.makeParent(name);
    await writeFile(target, content, { mode: 0o444, flag: "wx" });
    await chmod(target, 0o444);
  }

  /** The empty `out/` the program's artifacts go into, writable by the program. */
  async makeArtifactsFolder(): Promise<string> {
    const folder = join(this.path, ARTIFACTS_FOLDER);
    await mkdir(folder, { recursive: true });
    if (this.owner) await chown(folder, this.owner.uid, this.owner.gid);
    return folder;
  }

  private async makeParent(name: string): Promise<string> {
    const target = join(this.path, safeRelativePath(name));
    const parent = dirname(target);
    if (parent !== this.path) {
      await mkdir(parent, { recursive: true });
      if (this.owner) await chownUpTo(parent, this.path, this.owner);
    }
    return target;
  }

  async remove(options: { keepMount?: boolean } = {}): Promise<void> {
    const idle = this.disk ? (idleMounts.get(idleKey(this.disk, this.parent)) ?? []) : [];
    if (options.keepMount !== false && this.disk && liveWorkDirs.get(this.root) && idle.length < IDLE_MOUNTS_KEPT) {
      try {
        // The run is dead by now: nothing can write here while it is emptied.
        await Promise.all(
          (await readdir(this.root)).map((entry) => rm(join(this.root, entry), { recursive: true, force: true })),
        );
        idle.push(this.root);
        idleMounts.set(idleKey(this.disk, this.parent), idle);
        return;
      } catch {
        // Not emptied: unmount it instead.
      }
    }
    if (this.disk) {
      // Lazy: a process of the run may not have been reaped yet; the tmpfs goes with the last one.
      await unmountLazily(this.disk.umount, this.root);
    }
    await rm(this.root, { recursive: true, force: true, maxRetries: 3 });
    liveWorkDirs.delete(this.root);
  }

  /** Unmounts the emptied tmpfs mounts kept for later runs; a closed sandbox leaves none behind. */
  static async releaseIdleMounts(): Promise<void> {
    const roots = [...idleMounts.values()].flat();
    idleMounts.clear();
    await Promise.all(
      roots.map(async (root) => {
        const disk = liveWorkDirs.get(root);
        if (disk) await new WorkDir(root, root, null, null, disk).remove({ keepMount: false });
      }),
    );
  }
}

async function chownUpTo(directory: string, root: string, owner: { uid: number; gid: number }): Promise<void> {
  for (let current = directory; current !== root && current.startsWith(root); current = dirname(current)) {
    await chown(current, owner.uid, owner.gid);
  }
}

/** Normalises a file name from a request; refuses anything that would land outside the work dir. */
export function safeRelativePath(name: string): string {
  const relative = pathInsideWorkDir(name);
  if (relative === null) throw new Error(`sandbox file name must stay inside the work dir: ${JSON.stringify(name)}`);
  return relative;
}
