export {
  LANGUAGES,
  type Language,
  type ParsedError,
  type RunResult,
  type RunStatus,
  SANDBOX_KINDS,
  type SandboxKind,
} from "../core/run-result.js";

import type { Language, RunResult, SandboxKind } from "../core/run-result.js";

export interface SandboxLimits {
  /** Wall-clock limit for one run; the whole process tree dies when it passes. */
  timeoutMs: number;
  memoryMb: number;
  cpuSeconds: number;
  maxProcesses: number;
  maxFileMb: number;
  /**
   * Bytes the run may write to /work and /tmp together, on a tmpfs of its own where the backend
   * can mount one (bwrap as root); elsewhere the size of the /tmp tmpfs.
   */
  maxDiskMb: number;
  /** Cap per stream (stdout and stderr each); the rest is dropped and `truncated` is set. */
  maxOutputBytes: number;
}

export interface RunRequest {
  language: Language;
  code: string;
  stdin?: string;
  /**
   * The Python to run a Python program with (a path, or a command on PATH) instead of the default
   * (`$SELFHEAL_PYTHON`, else python3 on PATH); such a run starts a fresh interpreter.
   */
  python?: string;
  /** Overrides the sandbox's `limits.timeoutMs` for this run. */
  timeoutMs?: number;
  /** Extra files written into the work dir before the run (name -> content). */
  files?: Record<string, string>;
  /**
   * A package cache entry (see packages.ts) mounted read-only into the run: Python finds it at the
   * end of sys.path, Node as /node_modules. Only backends with `mountsPackages` mount it.
   */
  packagesDir?: string;
  /** Input files put into the work dir read-only (mode 0444, not owned by the program's uid where it has its own). */
  inputs?: readonly InputFile[];
  /** Copy what the program leaves under `out/` to the host before the work dir goes. */
  collectArtifacts?: ArtifactRequest;
}

export interface InputFile {
  /** Relative to the work dir; a name that escapes it is refused. */
  name: string;
  content: Uint8Array;
}

export interface ArtifactRequest {
  /** Host folder to copy `out/...` into; it is created. */
  into: string;
  maxFiles: number;
  /** For all files together. */
  maxBytes: number;
}

export type OutputStream = "stdout" | "stderr";

export interface RunHooks {
  /** Called with each complete line as the program prints it, for live display. */
  onOutput?: (stream: OutputStream, line: string) => void;
  /** Aborting it kills the whole run at once; the result then has status `killed`. */
  signal?: AbortSignal;
}

/** How far one limit holds: for the whole run, for each process (or file) only, or not at all. */
export interface Containment {
  scope: "run" | "process" | "none";
  /** The mechanism, in a few words: "cgroup v1: 256 MiB for the whole run, ...". */
  by: string;
}

/** What a sandbox holds here, found when it was made; `selfheal doctor` prints it. */
export interface SandboxIsolation {
  kind: Exclude<SandboxKind, "auto">;
  memory: Containment;
  processes: Containment;
  cpu: Containment;
  /** Bytes and files written by the run. */
  disk: Containment;
  /** Which system calls the kernel refuses the program. */
  syscalls: Containment;
  /** Why a stronger mechanism is missing, one sentence each. */
  notes: string[];
}

export interface Sandbox {
  /** The backend actually chosen (never `auto`). */
  readonly kind: Exclude<SandboxKind, "auto">;
  run(request: RunRequest, hooks?: RunHooks): Promise<RunResult>;
  /** True when `run` mounts `request.packagesDir`; a backend without it cannot offer installed packages. */
  readonly mountsPackages?: boolean;
  /** Which limits hold for the whole run here, and by what. */
  describe?(): SandboxIsolation;
  /** Releases pre-warmed processes; safe to call more than once. */
  close?(): Promise<void>;
}

/** A sandbox that can also be asked to warm interpreters ahead of need. */
export interface ManagedSandbox extends Sandbox {
  /**
   * Probes what the backend needs of the host (once per process, without blocking the event loop)
   * and resolves once runs can start; every run awaits it. Safe to call more than once.
   */
  prepare(): Promise<void>;
  /** Starts interpreters for these languages now and resolves once they wait for code. */
  prewarm(languages?: readonly Language[]): Promise<void>;
  close(): Promise<void>;
  describe(): SandboxIsolation;
}
