import { fansOutAfterFailure, shouldProbe } from "../core/candidates.js";
import { parseSettings } from "../core/settings.js";
import { type AgentState, objectionsFor } from "../core/state.js";

/** Every run ends through `finish`, the one step that tidies up after the attempts (see nodes/finish.ts). */
export const AFTER_CRITIC_TARGETS = ["fixer", "generator", "finish"] as const;
export type AfterCriticTarget = (typeof AFTER_CRITIC_TARGETS)[number];

/** Follows the critic's decision; a replacement critic must keep the built-in's `decision` (or make one with decideAfterCritic). */
export function routeAfterCritic(state: Pick<AgentState, "decision" | "attempt" | "status">): AfterCriticTarget {
  // The critic stops the run itself, with no decision, when the LLM review cannot be had (model_error, budget).
  if (state.status !== "running") return "finish";
  if (!state.decision)
    throw new Error(
      `the critic made no decision for attempt ${state.attempt}; a replacement critic must return one (see decideAfterCritic)`,
    );
  return state.decision.next;
}

export const TOWARDS_EXECUTION_TARGETS = ["approval", "executor"] as const;
export type TowardsExecutionTarget = (typeof TOWARDS_EXECUTION_TARGETS)[number];

/**
 * Into execution: through the approval gate only when approval is on and the attempt is still
 * to run (an objection already fails it), so a run without approval pays no step for the gate.
 */
export function routeTowardsExecution(
  state: Pick<AgentState, "attempt" | "objections">,
  config?: { context?: unknown },
): TowardsExecutionTarget {
  const blocked = objectionsFor(state, state.attempt + 1).length > 0;
  return parseSettings(config?.context).approval && !blocked ? "approval" : "executor";
}

export const AFTER_WRITE_TARGETS = ["execution", "finish"] as const;
export type AfterWriteTarget = (typeof AFTER_WRITE_TARGETS)[number];

/**
 * After the generator or fixer: on towards execution, unless the node already ended the run
 * (budget spent, model error). `execution` stands for the first step before execution; the
 * graph maps it to that node.
 */
export function routeAfterWrite(state: Pick<AgentState, "status">): AfterWriteTarget {
  return state.status === "running" ? "execution" : "finish";
}

export const START_TARGETS = ["generator", "candidate"] as const;
export type StartTarget = (typeof START_TARGETS)[number];

/** The first round: one program from the generator, or `candidates` of them at once. */
export function routeFromStart(config?: { context?: unknown }): StartTarget {
  return parseSettings(config?.context).candidates > 1 ? "candidate" : "generator";
}

/** After the critic, in a graph with rounds of candidates: a repair becomes a new round when the strategy says so. */
export const AFTER_ROUND_TARGETS = [...AFTER_CRITIC_TARGETS, "candidate"] as const;
export type AfterRoundTarget = (typeof AFTER_ROUND_TARGETS)[number];

/**
 * `routeAfterCritic`, with the strategy applied: `resample` (and `mixed`, with more than one
 * candidate) answer a failed round with a new round of candidates where `repair` goes to the fixer.
 * A fresh rewrite and the end of the run are the policy's, whatever the strategy.
 */
export function routeNextRound(
  state: Pick<AgentState, "decision" | "attempt" | "status">,
  config?: { context?: unknown },
): AfterRoundTarget {
  const next = routeAfterCritic(state);
  return next === "fixer" && fansOutAfterFailure(parseSettings(config?.context)) ? "candidate" : next;
}

export const AFTER_JOIN_TARGETS = ["critic", "probe", "finish"] as const;
export type AfterJoinTarget = (typeof AFTER_JOIN_TARGETS)[number];

/**
 * After a round is joined: to the critic; first through the probe when none passed and the model
 * proposed inputs to tell them apart; to the end when no candidate could write a program.
 */
export function routeAfterJoin(
  state: Pick<AgentState, "status" | "candidateChoice" | "proposedInputs" | "language">,
): AfterJoinTarget {
  if (state.status !== "running") return "finish";
  return shouldProbe(state) ? "probe" : "critic";
}
