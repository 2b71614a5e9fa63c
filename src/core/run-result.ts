import { z } from "zod";
import { ArtifactCollectionSchema } from "./data-files.js";
import { LANGUAGES, SANDBOX_KINDS, TEST_ISOLATIONS } from "./setting-names.js";

/**
 * The shapes every layer shares, declared once as zod schemas with their types inferred: the
 * sandbox produces a RunResult, the state stores it (as an Execution), the nodes read it.
 */

export { LANGUAGES, SANDBOX_KINDS, TEST_ISOLATIONS };

export const LanguageSchema = z.enum(LANGUAGES);
export type Language = z.infer<typeof LanguageSchema>;

export const SandboxKindSchema = z.enum(SANDBOX_KINDS);
export type SandboxKind = z.infer<typeof SandboxKindSchema>;

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
