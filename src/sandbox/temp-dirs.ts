import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync } from "node:fs";
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
  let mounted: Set<string> | undefined;
  for (const entry of entries) {
    const pid = tempDirOwner(entry);
    if (!pid || pid === process.pid || processIsAlive(pid)) continue;
    // A run's tmpfs (work-dir.ts) is unmounted first: rm would empty it and then fail on the mount.
    mounted ??= mountPoints();
    if (mounted.has(join(tmpdir(), entry))) spawnSync("umount", ["-l", join(tmpdir(), entry)], { stdio: "ignore" });
    try {
      rmSync(join(tmpdir(), entry), { recursive: true, force: true });
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
  return Number(OUR_TEMP_DIR.exec(name)?.[1]) || undefined;
}
