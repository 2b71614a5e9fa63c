import { z } from "zod";
import { ArtifactCollectionSchema } from "./data-files.js";

/**
 * The shapes every layer shares, declared once as zod schemas with their types inferred: the
 * sandbox produces a RunResult, the state stores it (as an Execution), the nodes read it.
 */

/** Languages a sandbox can run. Python is the default everywhere. */
export const LANGUAGES = ["python", "javascript"] as const;
export const LanguageSchema = z.enum(LANGUAGES);
export type Language = z.infer<typeof LanguageSchema>;

/** Which backend to use; `auto` picks bwrap when it works here, else the plain process. */
export const SANDBOX_KINDS = ["auto", "bwrap", "process", "container", "gvisor"] as const;
export const SandboxKindSchema = z.enum(SANDBOX_KINDS);
export type SandboxKind = z.infer<typeof SandboxKindSchema>;

/**
 * How acceptance tests are joined to the program: `process`, in a process of their own that the
 * program cannot reach (the default; see docs/security.md), or `shared`, appended to the program and
 * run in its process as HumanEval does.
 */
export const TEST_ISOLATIONS = ["process", "shared"] as const;
export const TestIsolationSchema = z.enum(TEST_ISOLATIONS);
export type TestIsolation = z.infer<typeof TestIsolationSchema>;

export const RUN_RESULT_STATUSES = [
  "ok",
  "error",
  "timeout",
  "memory_limit",
  "output_limit",
  "killed",
  "unavailable",
] as const;
export type RunStatus = (typeof RUN_RESULT_STATUSES)[number];

/** A Python traceback or Node stack trace, parsed so the fixer and the fingerprint can read it. */
export const ParsedErrorSchema = z.object({
  type: z.string(),
  message: z.string(),
  /** Line in the submitted code where the error was raised, when the trace names it. */
  line: z.number().nullable(),
  traceback: z.string(),
});
export type ParsedError = z.infer<typeof ParsedErrorSchema>;

/** What one sandbox run produced. */
export const RunResultSchema = z.object({
  status: z.enum(RUN_RESULT_STATUSES),
  exitCode: z.number().nullable(),
  signal: z.string().nullable(),
  stdout: z.string(),
  stderr: z.string(),
  truncated: z.boolean(),
  durationMs: z.number(),
  error: ParsedErrorSchema.optional(),
  /** What the program left under `out/`, when the request asked for it. */
  artifacts: ArtifactCollectionSchema.optional(),
});
export type RunResult = z.infer<typeof RunResultSchema>;
