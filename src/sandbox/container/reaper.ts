import { type ChildProcess, spawn } from "node:child_process";
import type { Socket } from "node:net";

/**
 * What the reaper runs: it waits for its stdin to close, which happens when the owner exits by any
 * means, SIGKILL included (the kernel closes the owner's end of the pipe), then removes every
 * container carrying the owner's label. Killing `docker run` itself would not do: the container
 * belongs to the daemon and outlives its client.
 */
const REAPER_SCRIPT = `
const { execFileSync } = require("node:child_process");
const [engine, label] = process.argv.slice(1);
const reap = () => {
  try {
    const ids = execFileSync(engine, ["ps", "-aq", "--filter", "label=" + label], { encoding: "utf8", timeout: 10000 })
      .split(/\\s+/)
      .filter(Boolean);
    if (ids.length > 0) execFileSync(engine, ["rm", "-f", ...ids], { stdio: "ignore", timeout: 20000 });
  } catch {}
  process.exit(0);
};
process.stdin.on("error", reap);
process.stdin.on("end", reap);
process.stdin.on("close", reap);
process.stdin.resume();
`;

/**
 * Starts the owner-independent watchdog of one container sandbox: a detached Node process (its own
 * session, so a kill of the owner's process group spares it) holding a pipe from the owner.
 * `release()` closes the pipe on purpose, as the owner's death would: the reaper then sweeps what
 * is left and exits. The pipe and the child are unref'd so they never keep the owner alive.
 */
export function startContainerReaper(engine: string, label: string): { release(): void; process: ChildProcess } {
  const child = spawn(process.execPath, ["-e", REAPER_SCRIPT, engine, label], {
    detached: true,
    stdio: ["pipe", "ignore", "ignore"],
  });
  child.on("error", () => undefined);
  child.stdin?.on("error", () => undefined);
  child.unref();
  (child.stdin as Socket | null)?.unref();
  return { release: () => child.stdin?.end(), process: child };
}
