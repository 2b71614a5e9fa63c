import type { BaseMessage } from "@langchain/core/messages";
import { countMessageTokens, messageText, TOKENS_PER_MESSAGE, TOKENS_PER_REPLY } from "./tokens.js";

/** Below this many output tokens a reply cannot hold a whole program, so the call is not worth making. */
export const MIN_OUTPUT_TOKENS = 256;

export type CallPlan = { ok: true; outputCap: number } | { ok: false; reason: string };

/**
 * Decides whether a model call fits in what is left of the budget. The output cap shrinks with
 * the remaining budget, so used + prompt + cap never passes the budget: a run can only overshoot
 * when a provider ignores the cap, by at most that one reply.
 */
export function planModelCall(args: {
  promptTokens: number;
  usedTokens: number;
  tokenBudget: number;
  maxOutputTokens: number;
}): CallPlan {
  const remaining = args.tokenBudget - args.usedTokens;
  const outputCap = Math.min(args.maxOutputTokens, remaining - args.promptTokens);
  if (outputCap < MIN_OUTPUT_TOKENS) {
    return {
      ok: false,
      reason: `Token budget exhausted: ${args.usedTokens} of ${args.tokenBudget} used; the next call needs about ${args.promptTokens} prompt tokens plus at least ${MIN_OUTPUT_TOKENS} for the reply.`,
    };
  }
  return { ok: true, outputCap };
}

/** How the prompt's size is known to the caller: counted on demand, at most once. */
export type PromptTokens = () => Promise<number>;

/**
 * No BPE token is shorter than one byte, so a prompt's UTF-8 length (with the same per-message
 * overhead) bounds its token count from above, at no cost.
 */
export function promptTokensAtMost(messages: BaseMessage[]): number {
  let total = TOKENS_PER_REPLY;
  for (const message of messages) total += TOKENS_PER_MESSAGE + Buffer.byteLength(messageText(message));
  return total;
}

/**
 * The plan for sending `messages` in a run that has used `usedTokens` of `tokenBudget`, with the
 * prompt's size, which stands in for the input count when a provider reports no usage. Counting
 * costs milliseconds per call, so while even the upper bound leaves room for a full reply the count
 * waits until something needs it; a provider that reports usage never does.
 */
export async function planPromptCall(
  messages: BaseMessage[],
  budget: { usedTokens: number; tokenBudget: number; maxOutputTokens: number },
): Promise<CallPlan & { promptTokens: PromptTokens }> {
  let counted: Promise<number> | undefined;
  const promptTokens: PromptTokens = () => {
    counted ??= countMessageTokens(messages);
    return counted;
  };
  const bounded = planModelCall({ promptTokens: promptTokensAtMost(messages), ...budget });
  if (bounded.ok && bounded.outputCap === budget.maxOutputTokens) return { ...bounded, promptTokens };
  return { ...planModelCall({ promptTokens: await promptTokens(), ...budget }), promptTokens };
}
