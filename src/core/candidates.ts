import type { Settings } from "./settings.js";
import type { AgentState, CandidateChoice, CandidateOutcome, CandidateSpec } from "./state.js";

/**
 * Best of n: a round of candidates, each written and run on its own (LangGraph `Send`), judged by
 * the one verdict, then joined. What is here is pure: which candidates a round writes and with what
 * share of the budget, and which candidate the round keeps.
 */

/** Whether the round after a failed one fans out again, or goes to the fixer as with one program. */
export function fansOutAfterFailure(settings: Pick<Settings, "strategy" | "candidates">): boolean {
  return settings.strategy === "resample" || (settings.strategy === "mixed" && settings.candidates > 1);
}

/**
 * The candidates of the next round: all fresh in the first round and with `resample`; with `mixed`,
 * one repair of the chosen program first. The budget left is split evenly among them now, before
 * any call, since calls made at once each see the same `usage`.
 */
export function planRound(
  state: { attempt: number; usage: { totalTokens: number } },
  settings: Pick<Settings, "strategy" | "candidates" | "tokenBudget">,
  /** Other calls made beside the candidates (the proposal of inputs), each with a share of its own. */
  otherCalls = 0,
): CandidateSpec[] {
  const round = state.attempt + 1;
  const count = settings.candidates;
  const share = Math.floor(Math.max(0, settings.tokenBudget - state.usage.totalTokens) / (count + otherCalls));
  return Array.from({ length: count }, (_, index) => ({
    round,
    index,
    kind: state.attempt > 0 && settings.strategy === "mixed" && index === 0 ? "repair" : "fresh",
    tokenBudget: state.usage.totalTokens + share,
  }));
}

/** The higher score, then the fewer tokens, then the earlier candidate. */
function better(a: CandidateOutcome, b: CandidateOutcome): CandidateOutcome {
  if (a.score !== b.score) return a.score > b.score ? a : b;
  if (a.tokens !== b.tokens) return a.tokens < b.tokens ? a : b;
  return a.index <= b.index ? a : b;
}

const ordinal = (index: number) => `#${index + 1}`;

/**
 * The candidate a round keeps. A pass ends the run: the best passing one by score, then the
 * cheapest. When none passes, the candidates are grouped by behaviour and the best of the largest
 * group is repaired: programs that agree on the inputs are likelier to share the right idea and
 * one bug than a program alone (CodeT, AlphaCode's clustering).
 */
export function chooseCandidate(outcomes: readonly CandidateOutcome[], hasTests: boolean): CandidateChoice {
  const [first, ...rest] = outcomes;
  if (!first) throw new Error("a round of candidates came back empty; check the fan-out");
  const byBehaviour = new Map<string, CandidateOutcome[]>();
  for (const outcome of outcomes)
    byBehaviour.set(outcome.behaviour, [...(byBehaviour.get(outcome.behaviour) ?? []), outcome]);
  const ranked = [...byBehaviour.values()]
    .map((members) => ({ members, best: members.reduce(better) }))
    .sort((a, b) => b.members.length - a.members.length || (better(a.best, b.best) === a.best ? -1 : 1));
  const groups = ranked.map(({ members, best }) => ({ members: members.map((m) => m.index), shows: best.shows }));
  const passing = outcomes.filter((outcome) => outcome.passed);
  const chosen = passing.length > 0 ? passing.reduce(better) : (ranked[0]?.best ?? rest.reduce(better, first));
  const largest = groups[0]?.members.length ?? 1;
  const verb = hasTests ? "behave the same on the tests' calls" : "print the same";
  const agreement =
    largest === outcomes.length && outcomes.length > 1
      ? `all ${outcomes.length} candidates ${verb}`
      : `${largest} of ${outcomes.length} candidates ${verb}`;
  const choice: CandidateChoice = {
    round: first.round,
    size: outcomes.length,
    chosen: chosen.index,
    passed: passing.length,
    groups,
    agreement,
  };
  if (passing.length === 0 && groups.length > 1) {
    choice.disagreement = groups
      .map(
        (group) =>
          `${group.members.length} candidate${group.members.length === 1 ? "" : "s"} (${group.members.map(ordinal).join(", ")}): ${group.shows}`,
      )
      .join("\n");
  }
  return choice;
}

/** Whether a joined round is worth probing on the proposed inputs: several programs, none passed. */
export function shouldProbe(state: Pick<AgentState, "candidateChoice" | "proposedInputs" | "language">): boolean {
  const choice = state.candidateChoice;
  return (
    state.language === "python" &&
    (state.proposedInputs?.length ?? 0) > 0 &&
    choice !== undefined &&
    choice.passed === 0 &&
    choice.size > 1
  );
}

/**
 * Whether this fan-out also asks the model for inputs: once per run, in the first round of
 * several candidates of a Python task, beside them, so it costs no latency of its own.
 */
export function proposesInputs(
  state: Pick<AgentState, "attempt" | "proposedInputs" | "language">,
  settings: Pick<Settings, "candidates" | "proposedInputs">,
): boolean {
  return (
    state.attempt === 0 &&
    state.proposedInputs === undefined &&
    state.language === "python" &&
    settings.candidates > 1 &&
    settings.proposedInputs > 0
  );
}
