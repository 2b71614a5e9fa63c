import { readSettings, type Settings } from "./context.js";
import type { AgentState, RunStatusValue } from "./state.js";

/** Why a run ends when the critic sends it to `finish`. */
export type StopDecision = { next: "finish"; status: Exclude<RunStatusValue, "running">; reason: string };
export type AfterCriticDecision = { next: "fixer" } | { next: "generator"; fingerprint: string } | StopDecision;

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
 */
export function decideAfterCritic(
  state: Pick<AgentState, "critique" | "attempt" | "usage" | "history" | "rewrittenFor">,
  settings: Pick<Settings, "maxAttempts" | "tokenBudget" | "repeatLimit">,
): AfterCriticDecision {
  if (state.critique?.passed) return { next: "finish", status: "passed", reason: state.critique.summary };
  if (state.attempt >= settings.maxAttempts) {
    return { next: "finish", status: "failed", reason: `Still failing after ${state.attempt} of ${settings.maxAttempts} attempts.` };
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
        reason: `The same error (${streak.fingerprint}) keeps coming back, even after a fresh rewrite.`,
      };
    }
    return { next: "generator", fingerprint: streak.fingerprint };
  }
  return { next: "fixer" };
}

export const AFTER_CRITIC_TARGETS = ["fixer", "generator", "finish"] as const;
export type AfterCriticTarget = (typeof AFTER_CRITIC_TARGETS)[number];

export function routeAfterCritic(state: AgentState, config?: { context?: unknown }): AfterCriticTarget {
  // The critic stops the run itself when the LLM review cannot be had (model_error, budget).
  if (state.status !== "running") return "finish";
  return decideAfterCritic(state, readSettings(config?.context)).next;
}

export const AFTER_WRITE_TARGETS = ["approval", "finish"] as const;
export type AfterWriteTarget = (typeof AFTER_WRITE_TARGETS)[number];

/**
 * After the generator or fixer: on towards execution (through the approval gate, which passes
 * straight through unless approval is on), unless the node already ended the run.
 */
export function routeAfterWrite(state: Pick<AgentState, "status">): AfterWriteTarget {
  return state.status === "running" ? "approval" : "finish";
}
