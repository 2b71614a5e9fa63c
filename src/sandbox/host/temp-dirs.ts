import { readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { processIsAlive } from "../../core/process.js";
import { unmountLazily } from "./mounts.js";
import { reapRecordedRuns, recordOwnerIsReplaced } from "./run-records.js";

/**
 * Every temporary dir selfheal makes is named `selfheal-<kind>-<pid>-XXXXXX` (a run's work dir, the
 * support files, the run records, an attempt's artifacts on their way to the state). Dirs are
 * removed when a run ends and on exit, but a process that is killed (a test worker torn down, a CI
 * job cancelled, a worker killed mid-run) never gets to; the pid in the name lets the next process
 * sweep those up.
 */
export function tempDirPrefix(kind: TempDirKind): string {
  sweepOnce();
  return join(tmpdir(), `selfheal-${kind}-${process.pid}-`);
}

/** One list for the names made and the names swept: a kind made here is always swept up too. */
const TEMP_DIR_KINDS = ["run", "support", "runs", "artifacts", "egress", "forks"] as const;
type TempDirKind = (typeof TEMP_DIR_KINDS)[number];
const OUR_TEMP_DIR = new RegExp(`^selfheal-(${TEMP_DIR_KINDS.join("|")})-(\\d+)-`);
let sweeping: Promise<void> | undefined;

/**
 * The sweep of dead processes' dirs, once per process: `prepareHost` awaits it before the first
 * run; a backend that is not prepared (process, gVisor) starts it with its first temp dir and
 * does not wait for it.
 */
export function sweepDeadProcessDirsOnce(): Promise<void> {
  sweeping ??= removeDeadProcessDirs().catch(() => undefined);
  return sweeping;
}

function sweepOnce(): void {
  void sweepDeadProcessDirsOnce();
}

/**
 * Removes the temporary dirs of selfheal processes that are gone; another live process's are kept.
 * A dead process's record of live runs (`selfheal-runs-*`, run-records.ts) is acted on first: what
 * its watchdog did not kill is killed now.
 */
export async function removeDeadProcessDirs(): Promise<void> {
  let entries: string[];
  try {
    entries = await readdir(tmpdir());
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
    mounted ??= await mountPoints();
    if (mounted.has(path)) await unmountLazily("umount", path);
    // Someone else's, or already gone: not ours to worry about.
    await rm(path, { recursive: true, force: true }).catch(() => undefined);
  }
}

async function mountPoints(): Promise<Set<string>> {
  try {
    // Octal escapes (\040 for a space) cannot occur in our own names, so they need no decoding.
    return new Set((await readFile("/proc/self/mounts", "utf8")).split("\n").map((line) => line.split(" ")[1] ?? ""));
  } catch {
    return new Set();
  }
}

/** The pid in the name of a sandbox temp dir, or undefined for any other name. */
export function tempDirOwner(name: string): number | undefined {
  return Number(OUR_TEMP_DIR.exec(name)?.[2]) || undefined;
}
