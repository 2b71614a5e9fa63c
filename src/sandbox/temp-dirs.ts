import { readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { processIsAlive } from "../core/process.js";

/**
 * Every temporary dir the sandbox makes is named `selfheal-<kind>-<pid>-XXXXXX`. Dirs are removed
 * when a run ends and on exit, but a process that is killed (a test worker torn down, a CI job
 * cancelled) never gets to; the pid in the name lets the next process sweep those up.
 */
export function tempDirPrefix(kind: "run" | "support"): string {
  sweepOnce();
  return join(tmpdir(), `selfheal-${kind}-${process.pid}-`);
}

const OUR_TEMP_DIR = /^selfheal-(?:run|support)-(\d+)-/;
let swept = false;

function sweepOnce(): void {
  if (swept) return;
  swept = true;
  removeDeadProcessDirs();
}

/** Removes the temporary dirs of selfheal processes that are gone; another live process's are kept. */
export function removeDeadProcessDirs(): void {
  let entries: string[];
  try {
    entries = readdirSync(tmpdir());
  } catch {
    return;
  }
  for (const entry of entries) {
    const pid = tempDirOwner(entry);
    if (!pid || pid === process.pid || processIsAlive(pid)) continue;
    try {
      rmSync(join(tmpdir(), entry), { recursive: true, force: true });
    } catch {
      // Someone else's, or already gone: not ours to worry about.
    }
  }
}

/** The pid in the name of a sandbox temp dir, or undefined for any other name. */
export function tempDirOwner(name: string): number | undefined {
  return Number(OUR_TEMP_DIR.exec(name)?.[1]) || undefined;
}
