import { execFile, spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { chmod, chown, mkdir, mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

import { FORK_SOCKET_NAME, ForkServer } from "../fork/fork-server.js";
import { FORK_RUNS_MOUNT, PYTHON_FORK_SERVER } from "../fork/server-source.js";
import { getSupportDir, PYTHON_JUDGE_SUPPORT_FILE } from "../host/bootstrap.js";
import { buildBwrapArgv, SECCOMP_FD } from "../host/bwrap-argv.js";
import type { BwrapHost } from "../host/bwrap-probe.js";
import type { Interpreter } from "../host/interpreters.js";
import { unmountLazily } from "../host/mounts.js";
import { trackRun } from "../host/run-reaper.js";
import { SANDBOX_SUPPORT_DIR, sandboxEnv } from "../host/system-view.js";
import { tempDirPrefix } from "../host/temp-dirs.js";
import { MIB } from "../limits.js";
import { setReferenced } from "../run/run-child.js";

const execFileAsync = promisify(execFile);

/** The server's own /tmp: it writes nothing there, but bwrap needs a size. */
const SERVER_TMP_BYTES = 1 * MIB;

/**
 * The host folder each forked run's work dir is made in, which the fork server's sandbox binds at
 * `FORK_RUNS_MOUNT`. As root it is a shared mount of its own, so a run's tmpfs mounted in it after
 * the server started appears inside the server too; its owner is the server's uid.
 */
export class RunsFolder {
  private constructor(
    readonly path: string,
    private readonly umount: string | null,
  ) {}

  static async create(host: BwrapHost, owner: number | null): Promise<RunsFolder> {
    const path = await mkdtemp(tempDirPrefix("forks"));
    const mounts = "mount" in host.tmpfs ? host.tmpfs : null;
    try {
      await chmod(path, 0o755);
      // The server's own /work: empty; each run mounts its own over it.
      await mkdir(join(path, ".server"));
      if (owner !== null) await Promise.all([chown(path, owner, owner), chown(join(path, ".server"), owner, owner)]);
      if (mounts) {
        await execFileAsync(mounts.mount, ["--bind", path, path]);
        await execFileAsync(mounts.mount, ["--make-shared", path]);
      }
    } catch (error) {
      if (mounts) await unmountLazily(mounts.umount, path);
      await rm(path, { recursive: true, force: true });
      throw error;
    }
    return new RunsFolder(path, mounts?.umount ?? null);
  }

  async remove(): Promise<void> {
    if (this.umount) await unmountLazily(this.umount, this.path);
    await rm(this.path, { recursive: true, force: true, maxRetries: 3 }).catch(() => undefined);
  }
}

/**
 * Starts the fork server for `interpreter` in a bwrap sandbox of the runs' shape (the same view of
 * the file system, no network, its own uid), which keeps its capabilities in its own user
 * namespace: each run it forks makes its namespaces and mounts with them, then drops them.
 */
export function startBwrapForkServer(
  host: BwrapHost,
  interpreter: Interpreter,
  runs: RunsFolder,
  hostUid: number | null,
): Promise<ForkServer> {
  const argv = buildBwrapArgv({
    host,
    hostUid,
    env: sandboxEnv(interpreter.prefixes),
    workDir: join(runs.path, ".server"),
    supportDir: getSupportDir(),
    prefixes: interpreter.prefixes,
    command: [
      interpreter.executable,
      "-I",
      "-u",
      "-c",
      PYTHON_FORK_SERVER,
      join(FORK_RUNS_MOUNT, FORK_SOCKET_NAME),
      host.seccomp.usable ? String(SECCOMP_FD) : "-",
      join(SANDBOX_SUPPORT_DIR, PYTHON_JUDGE_SUPPORT_FILE),
    ],
    tmpfsBytes: SERVER_TMP_BYTES,
    forkServer: { runsDir: runs.path, at: FORK_RUNS_MOUNT },
  });
  const [file = "", ...args] = argv;
  const filterFd = host.seccomp.usable ? openSync(host.seccomp.path, "r") : null;
  let child: ReturnType<typeof spawn>;
  try {
    child = spawn(file, args, {
      env: {},
      detached: true,
      // Its stdin stays open while we live: at EOF it exits (it is our child, and so are its runs).
      stdio: ["pipe", "pipe", "pipe", "ignore", filterFd ?? "ignore"],
    });
  } finally {
    if (filterFd !== null) closeSync(filterFd);
  }
  child.on("error", () => undefined);
  child.stdin?.on("error", () => undefined);
  // Idle, it must not keep a CLI or a test runner alive.
  setReferenced(child, false);
  const forget = trackRun({ processGroup: child.pid });
  return ForkServer.start(child, runs.path, forget);
}
