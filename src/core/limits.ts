/**
 * The sandbox's limits, declared once: their defaults and bounds here, the settings schema
 * (settings.ts) builds its limit settings from them, and every backend applies them per run.
 */
export interface SandboxLimits {
  /** Wall-clock limit for one run; the whole process tree dies when it passes. */
  timeoutMs: number;
  /** Memory in MiB: for the whole run where the backend has a cgroup, else per process. */
  memoryMb: number;
  /** CPU seconds: for the whole run where the backend can count them, else per process. */
  cpuSeconds: number;
  /** Processes (and threads) the run may have at once. */
  maxProcesses: number;
  /** The largest file the run may write, in MiB. */
  maxFileMb: number;
  /**
   * Bytes the run may write to /work and /tmp together, on a tmpfs of its own where the backend
   * can mount one (bwrap as root); elsewhere the size of the /tmp tmpfs.
   */
  maxDiskMb: number;
  /** Cap per stream (stdout and stderr each); the rest is dropped and `truncated` is set. */
  maxOutputBytes: number;
  /** Connections through the egress proxy per run, with an allowlist (`allowHosts`); later ones are refused. */
  maxConnections: number;
  /** MiB through the egress proxy per run, both ways; past it open connections are cut and new ones refused. */
  maxNetworkMb: number;
}

/** Limits used when the caller does not set them; generous for a test program, small for a host. */
export const DEFAULT_LIMITS: Readonly<SandboxLimits> = Object.freeze({
  timeoutMs: 10_000,
  memoryMb: 512,
  cpuSeconds: 10,
  maxProcesses: 64,
  maxFileMb: 16,
  maxDiskMb: 64,
  maxOutputBytes: 65_536,
  maxConnections: 64,
  maxNetworkMb: 64,
});

/**
 * The range a setting may give each limit: below the minimum Python or Node cannot start (or the
 * limit is a typo); above the maximum a run could take the host down with it.
 */
export const LIMIT_BOUNDS: Readonly<Record<keyof SandboxLimits, { min: number; max: number }>> = Object.freeze({
  timeoutMs: { min: 100, max: 3_600_000 },
  memoryMb: { min: 32, max: 65_536 },
  cpuSeconds: { min: 1, max: 3_600 },
  maxProcesses: { min: 4, max: 4_096 },
  maxFileMb: { min: 1, max: 65_536 },
  maxDiskMb: { min: 1, max: 65_536 },
  maxOutputBytes: { min: 1_024, max: 64 * 1024 * 1024 },
  maxConnections: { min: 1, max: 10_000 },
  maxNetworkMb: { min: 1, max: 65_536 },
});

/**
 * Interpreters a local sandbox keeps started ahead of need, per language. One keeps an idle host
 * cheap (a warm Python holds ~10 MiB); more serve runs that come faster than one starts (~30 ms
 * under bwrap), such as a batch or a round of candidates. Each waiting one holds a work dir, and
 * under bwrap as root a uid and a cgroup, so the ceiling stays small.
 */
export const SANDBOX_POOL_SIZE = Object.freeze({ default: 1, min: 1, max: 16 });
