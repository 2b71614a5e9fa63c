import type { BaseMessage } from "@langchain/core/messages";
import { countMessageTokens } from "./tokens.js";

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

/**
 * The plan for sending `messages` in a run that has used `usedTokens` of `tokenBudget`, with the
 * prompt's size, which stands in for the input count when a provider reports no usage.
 */
export async function planPromptCall(
  messages: BaseMessage[],
  budget: { usedTokens: number; tokenBudget: number; maxOutputTokens: number },
): Promise<CallPlan & { promptTokens: number }> {
  const promptTokens = await countMessageTokens(messages);
  return { ...planModelCall({ promptTokens, ...budget }), promptTokens };
}
