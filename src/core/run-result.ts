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

/** One request a program made through the egress proxy (sandbox/egress/proxy.ts), allowed or not. */
export const ConnectionRecordSchema = z.object({
  host: z.string(),
  port: z.number(),
  method: z.enum(["CONNECT", "HTTP"]),
  /** Whether the allowlist and the limits let it through. */
  allowed: z.boolean(),
  /** Why it was refused, or, for an allowed one, what went wrong on the way (unreachable, cut). */
  reason: z.string().optional(),
  /** Bytes the program sent (a plain request's body, or what went into a tunnel). */
  bytesUp: z.number(),
  /** Bytes the program received (a plain response's body, or what came out of a tunnel). */
  bytesDown: z.number(),
});
export type ConnectionRecord = z.infer<typeof ConnectionRecordSchema>;

/** What a run with an allowlist did on the network. */
export const EgressReportSchema = z.object({
  connections: z.array(ConnectionRecordSchema),
  /** Refusals past the first thousand, counted but not recorded one by one. */
  unrecordedRefusals: z.number(),
  /** Whether the backend enforces the list (bwrap, container) or only offers the proxy (process). */
  enforced: z.boolean(),
});
export type EgressReport = z.infer<typeof EgressReportSchema>;

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
  /** With `request.allowHosts`: each connection the program asked the egress proxy for. */
  egress: EgressReportSchema.optional(),
});
export type RunResult = z.infer<typeof RunResultSchema>;
