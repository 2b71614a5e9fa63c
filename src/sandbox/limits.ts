import type { SandboxLimits } from "./types.js";

export const MIB = 1024 * 1024;

/** Limits used when the caller does not set them; generous for a test program, small for a host. */
export const DEFAULT_LIMITS: Readonly<SandboxLimits> = Object.freeze({
  timeoutMs: 10_000,
  memoryMb: 512,
  cpuSeconds: 10,
  maxProcesses: 64,
  maxFileMb: 16,
  maxDiskMb: 64,
  maxOutputBytes: 65_536,
});

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
