import type { Settings } from "./settings.js";
import type { AgentState, Decision } from "./state.js";

/** Why a run ends when the critic stops it. */
export type StopDecision = Extract<Decision, { next: "finish" }>;
export type AfterCriticDecision = Decision;

/** How many of the latest attempts in a row failed with the same fingerprint. */
export function repeatStreak(state: Pick<AgentState, "history">): { fingerprint?: string; count: number } {
  const latest = state.history.at(-1)?.fingerprint;
  if (!latest) return { count: 0 };
  let count = 0;
  for (let i = state.history.length - 1; i >= 0 && state.history[i]?.fingerprint === latest; i--) count++;
  return { fingerprint: latest, count };
}

/**
 * The whole policy after a verdict, in the order that matters: a pass wins, then the hard
 * limits, then a repeating error earns one fresh rewrite, then stuck; otherwise repair.
 * The critic calls it once per attempt and stores the answer in `decision`.
 */
export function decideAfterCritic(
  state: Pick<AgentState, "critique" | "attempt" | "usage" | "history" | "rewrittenFor"> &
    Partial<Pick<AgentState, "errors">>,
  settings: Pick<Settings, "maxAttempts" | "tokenBudget" | "repeatLimit">,
): Decision {
  if (state.critique?.passed) return { next: "finish", status: "passed", reason: state.critique.summary };
  if (state.attempt >= settings.maxAttempts) {
    return {
      next: "finish",
      status: "failed",
      reason: `Still failing after ${state.attempt} of ${settings.maxAttempts} attempts.`,
    };
  }
  if (state.usage.totalTokens >= settings.tokenBudget) {
    return {
      next: "finish",
      status: "budget_exhausted",
      reason: `Token budget spent: ${state.usage.totalTokens} of ${settings.tokenBudget}.`,
    };
  }
  const streak = repeatStreak(state);
  if (streak.fingerprint && streak.count >= settings.repeatLimit) {
    if (state.rewrittenFor.includes(streak.fingerprint)) {
      return {
        next: "finish",
        status: "stuck",
        reason: `The same error keeps coming back, even after a fresh rewrite: ${describeRepeat(state, streak.fingerprint)}`,
      };
    }
    return { next: "generator", fingerprint: streak.fingerprint };
  }
  return { next: "fixer" };
}

/** The repeating error in words (a person reads this), with its fingerprint for scripts. */
function describeRepeat(
  state: Pick<AgentState, "history"> & Partial<Pick<AgentState, "errors">>,
  fingerprint: string,
): string {
  const record = state.errors?.find((error) => error.fingerprint === fingerprint);
  const error = record
    ? `${record.type}: ${record.message}`
    : ([...state.history].reverse().find((entry) => entry.fingerprint === fingerprint)?.outcome ?? "an error");
  // One full stop: an error message often ends in its own, and "only.." reads as a typo.
  return `${error} (fingerprint ${fingerprint})${/[.!?]$/.test(error) ? "" : "."}`;
}
