import { DEFAULT_LIMITS, SANDBOX_POOL_SIZE, type SandboxLimits } from "../core/limits.js";
import type { RunRequest } from "./types.js";

export const MIB = 1024 * 1024;

export { DEFAULT_LIMITS, SANDBOX_POOL_SIZE };

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

/** The pool size a caller asked for, checked: a typo must not start hundreds of interpreters. */
export function resolvePoolSize(size: number = SANDBOX_POOL_SIZE.default): number {
  const { min, max } = SANDBOX_POOL_SIZE;
  if (!Number.isInteger(size) || size < min || size > max) {
    throw new RangeError(`sandbox pool size must be a whole number from ${min} to ${max}, got ${size}`);
  }
  return size;
}
