import { chooseCandidate } from "../core/candidates.js";
import type { AgentState, AgentUpdate, CandidateOutcome } from "../core/state.js";
import type { AgentNode } from "./types.js";

/**
 * Where a round of candidates meets again, once every one has come back: it keeps one (see
 * chooseCandidate) and puts it where the critic reads a single program, so the critic, the policy
 * and the fixer work on a round as on one attempt. The checkpoint after it holds every candidate.
 */
export const joinNode: AgentNode = (state) =>
  keepRound(
    state,
    (state.candidates ?? []).filter((outcome) => outcome.round === state.attempt + 1),
  );

/** The update that keeps one candidate of a round; also the probe's, after it regrouped them. */
export function keepRound(state: Pick<AgentState, "tests">, outcomes: readonly CandidateOutcome[]): AgentUpdate {
  const round = outcomes[0]?.round ?? 0;
  const ran = outcomes.filter((outcome) => !outcome.stop);
  const [stopped] = outcomes;
  if (ran.length === 0) {
    if (!stopped?.stop) throw new Error(`no candidate of round ${round} came back; check the fan-out`);
    return { status: stopped.stop.status, reason: stopped.stop.reason };
  }
  const choice = chooseCandidate(ran, Boolean(state.tests?.trim()));
  const chosen = ran.find((outcome) => outcome.index === choice.chosen);
  if (!chosen) throw new Error(`candidate ${choice.chosen} of round ${round} is missing`);
  const tokens = outcomes.reduce((sum, outcome) => sum + outcome.tokens, 0);
  const update: AgentUpdate = {
    attempt: round,
    lastRun: chosen.run,
    draft: { author: "candidate", tokens, hasCode: chosen.hasCode },
    candidateChoice: choice,
  };
  if (chosen.hasCode) update.code = chosen.code;
  return update;
}
