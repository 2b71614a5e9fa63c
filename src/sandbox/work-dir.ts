import { rmSync } from "node:fs";
import { chown, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { dirname, isAbsolute, join, normalize, sep } from "node:path";

import { tempDirPrefix } from "./temp-dirs.js";

/**
 * Work dirs not yet removed. A sandbox that is never closed leaves its pre-warmed interpreter's dir
 * behind when the process exits (the interpreter itself exits when its control pipe closes), so
 * whatever is left is removed on exit.
 */
const liveWorkDirs = new Set<string>();
process.once("exit", () => {
  for (const path of liveWorkDirs) rmSync(path, { recursive: true, force: true });
});

/** The one writable directory of a run; the code and `request.files` are written here. */
export class WorkDir {
  private constructor(
    readonly path: string,
    /** Owner to give every file, when the program runs as a different uid than the host. */
    private readonly owner: { uid: number; gid: number } | null,
  ) {}

  static async create(owner: { uid: number; gid: number } | null = null): Promise<WorkDir> {
    const path = await mkdtemp(tempDirPrefix("run"));
    liveWorkDirs.add(path);
    if (owner) await chown(path, owner.uid, owner.gid);
    return new WorkDir(path, owner);
  }

  /** Writes `content` at a relative path inside the work dir; anything escaping it is refused. */
  async writeFile(name: string, content: string): Promise<void> {
    const target = join(this.path, safeRelativePath(name));
    const parent = dirname(target);
    if (parent !== this.path) {
      await mkdir(parent, { recursive: true });
      if (this.owner) await chownUpTo(parent, this.path, this.owner);
    }
    await writeFile(target, content);
    if (this.owner) await chown(target, this.owner.uid, this.owner.gid);
  }

  async remove(): Promise<void> {
    await rm(this.path, { recursive: true, force: true, maxRetries: 3 });
    liveWorkDirs.delete(this.path);
  }
}

async function chownUpTo(directory: string, root: string, owner: { uid: number; gid: number }): Promise<void> {
  for (let current = directory; current !== root && current.startsWith(root); current = dirname(current)) {
    await chown(current, owner.uid, owner.gid);
  }
}

/** Normalises a file name from a request; refuses anything that would land outside the work dir. */
export function safeRelativePath(name: string): string {
  const relative = normalize(name);
  if (name === "" || isAbsolute(relative) || relative === "." || relative === ".." || relative.startsWith(`..${sep}`)) {
    throw new Error(`sandbox file name must stay inside the work dir: ${JSON.stringify(name)}`);
  }
  return relative;
}
