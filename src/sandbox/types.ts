export {
  LANGUAGES,
  type Language,
  type ParsedError,
  type RunResult,
  type RunStatus,
  SANDBOX_KINDS,
  type SandboxKind,
} from "../core/run-result.js";

import type { AllowHostInput } from "../core/allowlist.js";
import type { SandboxLimits } from "../core/limits.js";
import type { Language, RunResult } from "../core/run-result.js";

export type { SandboxLimits } from "../core/limits.js";

export interface RunRequest {
  language: Language;
  code: string;
  stdin?: string;
  /**
   * The Python to run a Python program with (a path, or a command on PATH) instead of the default
   * (`$SELFHEAL_PYTHON`, else python3 on PATH); such a run starts a fresh interpreter.
   */
  python?: string;
  /** Overrides the sandbox's `limits.timeoutMs` for this run (and `limits.timeoutMs` here). */
  timeoutMs?: number;
  /**
   * This run's limits, laid over the ones the sandbox was made with; every backend applies them to
   * this run alone (the executor passes the run's settings here).
   */
  limits?: Partial<SandboxLimits>;
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
  /**
   * Hosts the program may reach over HTTP(S), through an egress proxy the run starts (see
   * `Sandbox.egress`); what it did is in `result.egress`. Empty or absent: no network, as always.
   */
  allowHosts?: readonly AllowHostInput[];
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
  /** The sandbox's `kind`. */
  kind: string;
  memory: Containment;
  processes: Containment;
  cpu: Containment;
  /** Bytes and files written by the run. */
  disk: Containment;
  /** Which system calls the kernel refuses the program. */
  syscalls: Containment;
  /** Why a stronger mechanism is missing, one sentence each. */
  notes: string[];
  /**
   * How a run's process starts: the languages whose runs are forked from an interpreter started
   * once (bwrap's fork server), and how, or why they start cold.
   */
  start?: { forked: Language[]; by: string };
}

/**
 * The sandbox contract: what the agent needs of any backend, ours or a user's. A backend proves it
 * by passing the conformance suite (`describeSandboxConformance` from `selfheal/testing`).
 *
 * - `run` writes `request.files`, then `request.inputs` (read-only), then the code into a fresh work
 *   dir, runs the program with `request.stdin`, and resolves with a `RunResult` once every process
 *   of the run is gone. The program's own failure is data (`status` error, timeout, memory_limit,
 *   output_limit, killed), never a rejection; a file name outside the work dir is the caller's bug
 *   and rejects (`safeRelativePath` says it). `stdout`/`stderr` are UTF-8 with invalid bytes
 *   replaced, each capped at the run's `maxOutputBytes` (`truncated` then set).
 * - Streaming: `hooks.onOutput` gets each complete line while the program still runs.
 * - Cancel: aborting `hooks.signal` kills every process of the run at once; the result has status
 *   `killed` and its stderr ends with `RUN_CANCELLED_NOTE`.
 * - Artifacts out: with `request.collectArtifacts`, what the program left under `out/` is copied to
 *   the host (bounded, no symlink followed) and listed in `result.artifacts`.
 * - Limits: the wall clock always holds for the whole run; the rest hold as `describe()` says.
 * - `close` releases whatever the sandbox keeps between runs; calling it twice is harmless.
 */
export interface Sandbox {
  /** The backend's name: ours are `process`, `bwrap`, `gvisor` and `container`; yours is your own. */
  readonly kind: string;
  run(request: RunRequest, hooks?: RunHooks): Promise<RunResult>;
  /** True when `run` mounts `request.packagesDir`; a backend without it cannot offer installed packages. */
  readonly mountsPackages?: boolean;
  /**
   * How `run` gives `request.allowHosts`: "enforced", the run's proxy is the program's only way
   * out; "offered", the proxy is in the program's environment but nothing stops other connections
   * (the process backend). Absent: not at all, and a run given hosts does not start.
   */
  readonly egress?: "enforced" | "offered";
  /** Which limits hold here, for the whole run or per process, and by what; `selfheal doctor` prints it. */
  describe(): SandboxIsolation;
  /** Releases pre-warmed processes and anything else kept between runs; safe to call more than once. */
  close(): Promise<void>;
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
