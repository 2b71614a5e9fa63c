import { readFileSync } from "node:fs";

/** Whether a process with this pid exists on this machine (a zombie counts until it is reaped). */
export function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * When the kernel started this process, in clock ticks since boot (field 22 of /proc/<pid>/stat),
 * or null where there is no /proc or no such process. A pid is reused once its process is gone; the
 * pair of pid and start time is not, so it is how a record names a process that may be long dead.
 */
export function processStartTime(pid: number): number | null {
  const start = Number(statFields(pid)?.[19]);
  return Number.isFinite(start) ? start : null;
}

/**
 * Whether the kernel still runs this process: it exists and is no zombie waiting to be reaped
 * (field 3 of /proc/<pid>/stat). A parent learns of a child's death a turn of its loop later.
 */
export function processIsRunning(pid: number): boolean {
  const state = statFields(pid)?.[0];
  return state !== undefined && state !== "Z";
}

/** The fields of /proc/<pid>/stat after the command name (the state first), or null where there are none. */
export function statFields(pid: number): string[] | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // The command name in parentheses may hold spaces and parentheses itself: count from the last ')'.
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/** A process as a record can name it: its pid, and its start time where /proc gives one. */
export interface ProcessIdentity {
  pid: number;
  startTime: number | null;
}

export function ownIdentity(): ProcessIdentity {
  return { pid: process.pid, startTime: processStartTime(process.pid) };
}

/** Whether this very process still runs: same pid and, where both are known, the same start time. */
export function identityIsAlive(identity: ProcessIdentity): boolean {
  if (!processIsAlive(identity.pid)) return false;
  if (identity.startTime === null) return true;
  const now = processStartTime(identity.pid);
  return now === null || now === identity.startTime;
}
