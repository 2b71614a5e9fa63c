import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { processIsAlive } from "../../core/process.js";
import { reapRecordedRuns, recordOwnerIsReplaced } from "./run-records.js";

/**
 * Every temporary dir the sandbox makes is named `selfheal-<kind>-<pid>-XXXXXX`. Dirs are removed
 * when a run ends and on exit, but a process that is killed (a test worker torn down, a CI job
 * cancelled) never gets to; the pid in the name lets the next process sweep those up.
 */
export function tempDirPrefix(kind: "run" | "support" | "runs"): string {
  sweepOnce();
  return join(tmpdir(), `selfheal-${kind}-${process.pid}-`);
}

const OUR_TEMP_DIR = /^selfheal-(run|support|runs)-(\d+)-/;
let swept = false;

function sweepOnce(): void {
  if (swept) return;
  swept = true;
  removeDeadProcessDirs();
}

/**
 * Removes the temporary dirs of selfheal processes that are gone; another live process's are kept.
 * A dead process's record of live runs (`selfheal-runs-*`, run-records.ts) is acted on first: what
 * its watchdog did not kill is killed now.
 */
export function removeDeadProcessDirs(): void {
  let entries: string[];
  try {
    entries = readdirSync(tmpdir());
  } catch {
    return;
  }
  let mounted: Set<string> | undefined;
  for (const entry of entries) {
    const pid = tempDirOwner(entry);
    if (!pid || pid === process.pid) continue;
    const path = join(tmpdir(), entry);
    const isRecord = OUR_TEMP_DIR.exec(entry)?.[1] === "runs";
    if (processIsAlive(pid) && !(isRecord && recordOwnerIsReplaced(path))) continue;
    if (isRecord) reapRecordedRuns(path);
    // A run's tmpfs (work-dir.ts) is unmounted first: rm would empty it and then fail on the mount.
    mounted ??= mountPoints();
    if (mounted.has(path)) spawnSync("umount", ["-l", path], { stdio: "ignore" });
    try {
      rmSync(path, { recursive: true, force: true });
    } catch {
      // Someone else's, or already gone: not ours to worry about.
    }
  }
}

function mountPoints(): Set<string> {
  try {
    // Octal escapes (\040 for a space) cannot occur in our own names, so they need no decoding.
    return new Set(
      readFileSync("/proc/self/mounts", "utf8")
        .split("\n")
        .map((line) => line.split(" ")[1] ?? ""),
    );
  } catch {
    return new Set();
  }
}

/** The pid in the name of a sandbox temp dir, or undefined for any other name. */
export function tempDirOwner(name: string): number | undefined {
  return Number(OUR_TEMP_DIR.exec(name)?.[2]) || undefined;
}
