import { z } from "zod";

// The run's bookkeeping, kept by reducers that are plain exported functions: the errors by
// fingerprint, one history entry per attempt, the token ledger, and the best attempt so far.

/** One failure observed at one attempt; the `errors` reducer folds these into ErrorRecords. */
export const ErrorObservationSchema = z.object({
  fingerprint: z.string(),
  type: z.string(),
  message: z.string(),
  attempt: z.number().int(),
});
export type ErrorObservation = z.infer<typeof ErrorObservationSchema>;

export const ErrorRecordSchema = z.object({
  fingerprint: z.string(),
  type: z.string(),
  message: z.string(),
  count: z.number().int(),
  firstAttempt: z.number().int(),
  lastAttempt: z.number().int(),
});
export type ErrorRecord = z.infer<typeof ErrorRecordSchema>;

/** A repeat of a known fingerprint bumps its count; only a new fingerprint adds a row. */
export function mergeErrors(current: ErrorRecord[], observed: ErrorObservation[]): ErrorRecord[] {
  const merged = current.map((record) => ({ ...record }));
  for (const { fingerprint, type, message, attempt } of observed) {
    const known = merged.find((record) => record.fingerprint === fingerprint);
    if (known) {
      known.count += 1;
      known.lastAttempt = Math.max(known.lastAttempt, attempt);
      known.message = message;
    } else {
      merged.push({ fingerprint, type, message, count: 1, firstAttempt: attempt, lastAttempt: attempt });
    }
  }
  return merged;
}

export const HistoryEntrySchema = z.object({
  attempt: z.number().int(),
  /** The node that wrote the program that ran at this attempt. */
  node: z.string(),
  codeHash: z.string(),
  /** `passed`, or the error type that failed the attempt. */
  outcome: z.string(),
  fingerprint: z.string().optional(),
  /** Tokens spent on this attempt: writing the program and judging it. */
  tokens: z.number().int(),
  /**
   * Packages installed during this attempt: its program failed to import one, and ran again once
   * they were installed. That rerun is part of the attempt, not a model attempt of its own.
   */
  installed: z.array(z.string()).optional(),
  /** 100 for a pass, else how far the run got (see `best`); the run's end reads it to keep artifacts. */
  score: z.number().optional(),
  /** The host folder this attempt's `out/` was copied into, when the run keeps artifacts. */
  artifactsFolder: z.string().optional(),
  /** With candidates: the artifact folders of the round's other candidates, which the run's end removes. */
  otherFolders: z.array(z.string()).optional(),
});
export type HistoryEntry = z.infer<typeof HistoryEntrySchema>;

const TokenCountSchema = z.object({
  inputTokens: z.number().int(),
  outputTokens: z.number().int(),
  totalTokens: z.number().int(),
  calls: z.number().int(),
});
export type TokenCount = z.infer<typeof TokenCountSchema>;

export const UsageSchema = TokenCountSchema.extend({ byNode: z.record(z.string(), TokenCountSchema) });
export type Usage = z.infer<typeof UsageSchema>;

/** One model call, as a node reports it to the ledger. */
export const ModelCallUsageSchema = z.object({
  node: z.string(),
  inputTokens: z.number().int(),
  outputTokens: z.number().int(),
});
export type ModelCallUsage = z.infer<typeof ModelCallUsageSchema>;

const zeroCount = (): TokenCount => ({ inputTokens: 0, outputTokens: 0, totalTokens: 0, calls: 0 });
export const emptyUsage = (): Usage => ({ ...zeroCount(), byNode: {} });

function addCall(count: TokenCount, call: ModelCallUsage): TokenCount {
  return {
    inputTokens: count.inputTokens + call.inputTokens,
    outputTokens: count.outputTokens + call.outputTokens,
    totalTokens: count.totalTokens + call.inputTokens + call.outputTokens,
    calls: count.calls + 1,
  };
}

export function addUsage(current: Usage, calls: ModelCallUsage[]): Usage {
  let usage = current;
  for (const call of calls) {
    usage = {
      ...addCall(usage, call),
      byNode: { ...usage.byNode, [call.node]: addCall(usage.byNode[call.node] ?? zeroCount(), call) },
    };
  }
  return usage;
}

export const BestAttemptSchema = z.object({
  attempt: z.number().int(),
  code: z.string(),
  /** 100 for a pass; failures score 10..90 by how far the run got, 0 when nothing ran. */
  score: z.number(),
});
export type BestAttempt = z.infer<typeof BestAttemptSchema>;

/**
 * The `best` and `artifacts` reducer: the higher score wins, and a later attempt wins a tie, being
 * the more recent program. An entry without a score (from before scores were kept) loses to any.
 */
export function keepHigherScore<Entry extends { score?: number }>(
  current: Entry | undefined,
  candidate: Entry | undefined,
): Entry | undefined {
  if (!candidate) return current;
  if (!current) return candidate;
  return (candidate.score ?? -1) >= (current.score ?? -1) ? candidate : current;
}
