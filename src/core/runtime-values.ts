import { z } from "zod";

/**
 * The values a failed run computed, as the harness inside the sandbox reported them (see
 * tools/runtime-values): already cut and masked there, cut again on the host before they enter
 * state, so no checkpoint holds more than `RUNTIME_VALUE_LIMITS` allows.
 */
export const RUNTIME_VALUE_LIMITS = {
  /** Characters of one shown value (a repr, an argument list). */
  valueChars: 300,
  /** Characters of an expression's source text. */
  exprChars: 160,
  frames: 3,
  localsPerFrame: 12,
  calls: 3,
  assertionParts: 8,
} as const;

export const ValuePartSchema = z.object({
  /** The expression as written (normalised by the parser). */
  expr: z.string(),
  /** `call` (its value is what the call returned), `operand`, or `argument of f`. */
  role: z.string(),
  /** Absent when the expression was never evaluated (a short-circuit). */
  value: z.string().optional(),
});
export type ValuePart = z.infer<typeof ValuePartSchema>;

/** A failed check: an `assert`, a `node:assert` call, or the condition of an `if (...) throw`. */
export const FailedCheckSchema = z.object({
  line: z.number().int(),
  /** `compare` (with `ops`, Python's names: Eq, Lt, ...; or the JS operator), `value`, `and`, `or`, `not`, `assert.<method>`. */
  kind: z.string(),
  ops: z.array(z.string()).optional(),
  parts: z.array(ValuePartSchema),
});
export type FailedCheck = z.infer<typeof FailedCheckSchema>;

export const FrameValuesSchema = z.object({
  function: z.string(),
  line: z.number().int(),
  /** `[name, value]`, arguments first, as the frame held them when the error passed through it. */
  locals: z.array(z.tuple([z.string(), z.string()])),
});
export type FrameValues = z.infer<typeof FrameValuesSchema>;

/** One call of a program function made by the failing test line. */
export const TracedCallSchema = z.object({
  function: z.string(),
  /** The test line that made the call. */
  line: z.number().int(),
  args: z.string(),
  /** Absent when the call raised instead of returning. */
  returned: z.string().optional(),
});
export type TracedCall = z.infer<typeof TracedCallSchema>;

export const RuntimeValuesSchema = z.object({
  assertion: FailedCheckSchema.optional(),
  /** Innermost first: the frame that raised, then its callers, program and tests only. */
  frames: z.array(FrameValuesSchema).optional(),
  calls: z.array(TracedCallSchema).optional(),
  /** Characters cut from the values, in the sandbox and on the host together. */
  cut: z.number().int().optional(),
});
export type RuntimeValues = z.infer<typeof RuntimeValuesSchema>;
