import { RUNTIME_VALUE_LIMITS, type RuntimeValues, RuntimeValuesSchema } from "../../core/runtime-values.js";
import { hostSecrets, maskSecrets } from "../../core/secrets.js";
import type { RunResult } from "../../sandbox/types.js";
import { VALUES_PREFIX } from "./instrument.js";

/** Whether a streamed stderr line is a harness's values line, which is no output of the program. */
export const isValuesLine = (line: string): boolean => line.startsWith(VALUES_PREFIX);

/**
 * The run with the harness's values line taken out of stderr, and the values it held, bounded and
 * masked. Only a line with this run's nonce counts; anything else is left where it is, as output.
 */
export function takeRuntimeValues<Result extends RunResult>(
  result: Result,
  nonce: string | undefined,
): { result: Result; values?: RuntimeValues } {
  if (!nonce) return { result };
  const start = result.stderr.indexOf(`${VALUES_PREFIX}${nonce} `);
  if (start === -1) return { result };
  const newline = result.stderr.indexOf("\n", start);
  const end = newline === -1 ? result.stderr.length : newline + 1;
  const stderr = result.stderr.slice(0, start) + result.stderr.slice(end);
  const json = result.stderr.slice(start + VALUES_PREFIX.length + nonce.length + 1, newline === -1 ? end : newline);
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    // Cut by the output limit halfway through: nothing trustworthy to show.
    return { result: { ...result, stderr } };
  }
  const values = boundRuntimeValues(raw);
  return values ? { result: { ...result, stderr }, values } : { result: { ...result, stderr } };
}

/**
 * Values as state may hold them: the schema's shape, every text cut to its limit and masked (the
 * harness masked inside the sandbox; this masks again with the host's own secrets), lists capped.
 */
export function boundRuntimeValues(
  raw: unknown,
  secrets: readonly string[] = hostSecrets(),
): RuntimeValues | undefined {
  const parsed = RuntimeValuesSchema.safeParse(raw);
  if (!parsed.success) return undefined;
  const limits = RUNTIME_VALUE_LIMITS;
  let cut = parsed.data.cut ?? 0;
  const text = (value: string, max: number): string => {
    const masked = maskSecrets(value, secrets);
    if (masked.length <= max) return masked;
    cut += masked.length - max;
    return `${masked.slice(0, max)}[... ${(masked.length - max).toLocaleString("en-US")} characters cut ...]`;
  };
  const { assertion, frames, calls } = parsed.data;
  const values: RuntimeValues = {};
  if (assertion) {
    values.assertion = {
      ...assertion,
      kind: text(assertion.kind, 40),
      ...(assertion.ops ? { ops: assertion.ops.slice(0, 4).map((op) => text(op, 20)) } : {}),
      parts: assertion.parts.slice(0, limits.assertionParts).map((part) => ({
        expr: text(part.expr, limits.exprChars),
        role: text(part.role, limits.exprChars),
        ...(part.value === undefined ? {} : { value: text(part.value, limits.valueChars) }),
      })),
    };
  }
  if (frames && frames.length > 0) {
    values.frames = frames.slice(0, limits.frames).map((frame) => ({
      function: text(frame.function, limits.exprChars),
      line: frame.line,
      locals: frame.locals
        .slice(0, limits.localsPerFrame)
        .map(([name, value]) => [text(name, limits.exprChars), text(value, limits.valueChars)] as [string, string]),
    }));
  }
  if (calls && calls.length > 0) {
    values.calls = calls.slice(-limits.calls).map((call) => ({
      function: text(call.function, limits.exprChars),
      line: call.line,
      args: text(call.args, limits.valueChars),
      ...(call.returned === undefined ? {} : { returned: text(call.returned, limits.valueChars) }),
    }));
  }
  if (!values.assertion && !values.frames && !values.calls) return undefined;
  if (cut > 0) values.cut = cut;
  return values;
}
