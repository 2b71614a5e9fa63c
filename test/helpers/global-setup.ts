import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { processIsAlive } from "../../src/core/process.js";
import { removeDeadProcessDirs, tempDirOwner } from "../../src/sandbox/host/temp-dirs.js";

const REPO_STORE = fileURLToPath(new URL("../../.selfheal", import.meta.url));

/** Each file of the repository's own run store with its size and mtime: any run written changes it. */
function storeSnapshot(): string {
  if (!existsSync(REPO_STORE)) return "(none)";
  return readdirSync(REPO_STORE)
    .sort()
    .map((name) => {
      const stat = statSync(join(REPO_STORE, name));
      return `${name} ${stat.size} ${stat.mtimeMs}`;
    })
    .join(", ");
}

/** Whether a live process owns a sandbox dir here (`selfheal-run-<pid>-...`, `selfheal-support-<pid>-...`). */
function sandboxDirOwnersAlive(dir: string): boolean {
  return readdirSync(dir).some((name) => {
    const pid = tempDirOwner(name);
    return pid !== undefined && processIsAlive(pid);
  });
}

/**
 * The guard for "tests leave nothing behind": the run gets a temp dir of its own (TMPDIR, which
 * os.tmpdir() and every child process read), and the run fails when anything is left in it or
 * when a test wrote to the repository's own .selfheal/ instead of a store of its own.
 */
export default function setup(): () => Promise<void> {
  const systemTemp = tmpdir();
  const runTemp = mkdtempSync(join(systemTemp, "selfheal-test-run-"));
  // It stands in for /tmp, so it is as open as /tmp: mkdtemp's 0700 would hide the sandbox's
  // support and work dirs from the unprivileged uid a bwrap run drops to as root, the bwrap probe
  // would fail, and `auto` would quietly run every test on the process backend.
  chmodSync(runTemp, 0o1777);
  process.env.TMPDIR = runTemp;
  // tsx (which runs the CLI from src/) keeps its compile cache in <tmpdir>/tsx-<euid>. It is a
  // cache, not a leftover; linking the system one in keeps every CLI start warm.
  const tsxCache = `tsx-${process.geteuid?.() ?? "user"}`;
  mkdirSync(join(systemTemp, tsxCache), { recursive: true });
  symlinkSync(join(systemTemp, tsxCache), join(runTemp, tsxCache));
  const storeBefore = storeSnapshot();

  return async () => {
    // A sandbox removes its dirs at exit, but vitest ends a worker with SIGTERM, which skips exit
    // handlers; selfheal's next process would sweep the dirs of dead processes, so the guard does
    // the same. The last workers may not be reaped yet (a zombie counts as alive): give them a moment.
    for (let waited = 0; waited < 5_000 && sandboxDirOwnersAlive(runTemp); waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await removeDeadProcessDirs();
    const left = readdirSync(runTemp).filter((name) => name !== tsxCache);
    rmSync(runTemp, { recursive: true, force: true });
    const storeAfter = storeSnapshot();
    const problems: string[] = [];
    if (left.length > 0)
      problems.push(`the tests left ${left.length} entries in the temp dir: ${left.sort().join(", ")}`);
    if (storeAfter !== storeBefore)
      problems.push(
        `the tests wrote to the repository's own .selfheal/ (before: ${storeBefore}; after: ${storeAfter}); give every run a --db or a cwd of its own`,
      );
    if (problems.length === 0) return;
    // vitest prints an error thrown here but still exits 0; the exit code is what CI reads.
    process.exitCode = 1;
    throw new Error(problems.join("\n"));
  };
}
