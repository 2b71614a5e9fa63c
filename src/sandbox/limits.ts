import { DEFAULT_LIMITS, type SandboxLimits } from "../core/limits.js";
import type { RunRequest } from "./types.js";

export const MIB = 1024 * 1024;

export { DEFAULT_LIMITS };

/** Open files per process; not in `SandboxLimits` because no caller has needed to tune it. */
export const MAX_OPEN_FILES = 256;

/** Files and directories a run's tmpfs may hold (its inodes); a run that needs more is unusual. */
export const MAX_DISK_FILES = 4096;

/** Fills in defaults and rejects values that would silently disable a limit. */
export function resolveLimits(overrides: Partial<SandboxLimits> = {}): SandboxLimits {
  const limits: SandboxLimits = { ...DEFAULT_LIMITS };
  for (const [key, value] of Object.entries(overrides) as [keyof SandboxLimits, number | undefined][]) {
    if (value === undefined) continue;
    if (!Number.isFinite(value) || value <= 0) {
      throw new RangeError(`sandbox limit ${key} must be a positive number, got ${value}`);
    }
    limits[key] = value;
  }
  return limits;
}

/** The limits of one run: the sandbox's, with the request's own laid over them (its `timeoutMs` last). */
export function limitsForRun(base: SandboxLimits, request: Pick<RunRequest, "limits" | "timeoutMs">): SandboxLimits {
  return resolveLimits({
    ...base,
    ...request.limits,
    ...(request.timeoutMs === undefined ? {} : { timeoutMs: request.timeoutMs }),
  });
}

/**
 * Whether an interpreter or container started under `started` holds a run asking `wanted`: the
 * limits fixed when it starts must match; the wall clock and the output cap are the host's to apply.
 */
export function sameStartLimits(started: SandboxLimits, wanted: SandboxLimits): boolean {
  return (["memoryMb", "cpuSeconds", "maxProcesses", "maxFileMb", "maxDiskMb"] as const).every(
    (key) => started[key] === wanted[key],
  );
}
