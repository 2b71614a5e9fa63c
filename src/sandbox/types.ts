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
  /** Cap per stream (stdout and stderr each); the rest is dropped and `truncated` is set. */
  maxOutputBytes: number;
}

export interface RunRequest {
  language: Language;
  code: string;
  stdin?: string;
  /** Overrides the sandbox's `limits.timeoutMs` for this run. */
  timeoutMs?: number;
  /** Extra files written into the work dir before the run (name -> content). */
  files?: Record<string, string>;
}

export type OutputStream = "stdout" | "stderr";

export interface RunHooks {
  /** Called with each complete line as the program prints it, for live display. */
  onOutput?: (stream: OutputStream, line: string) => void;
}

export interface Sandbox {
  /** The backend actually chosen (never `auto`). */
  readonly kind: Exclude<SandboxKind, "auto">;
  run(request: RunRequest, hooks?: RunHooks): Promise<RunResult>;
  /** Releases pre-warmed processes; safe to call more than once. */
  close?(): Promise<void>;
}
