import type { AgentState, AgentUpdate, CandidateOutcome, CandidateSpec, Execution, Note } from "../core/state.js";
import { scoreAttempt } from "../core/verdict.js";
import {
  type Behaviour,
  behaviourOfProbe,
  behaviourOfRun,
  canProbe,
  pythonBehaviourProbe,
} from "../tools/behaviour.js";
import { type SandboxSlots, slotKeyOf } from "../tools/slots.js";
import { judgeWithArtifacts } from "./artifact-check.js";
import { writeAttempt } from "./attempt.js";
import { executeProgram, notRun } from "./executor.js";
import type { AgentRuntime, NodeDeps } from "./types.js";

/**
 * What one candidate is sent (LangGraph `Send`): the part of the state its prompt and its run
 * read, and its spec. Not the whole state: the checkpoint before the fan-out stores k copies.
 */
export type CandidateTask = Pick<
  AgentState,
  "task" | "language" | "tests" | "inputs" | "expect" | "code" | "lastRun" | "critique" | "errors" | "usage" | "notes"
> & {
  candidate: CandidateSpec;
  latestFingerprint?: string;
  /** How the last round's candidates disagreed, for a repair candidate's prompt. */
  disagreement?: string;
};

export function candidateTask(state: AgentState, spec: CandidateSpec): CandidateTask {
  const { task, language, tests, inputs, expect, code, lastRun, critique, errors, usage, notes } = state;
  const choice = state.candidateChoice?.round === state.attempt ? state.candidateChoice : undefined;
  return {
    task,
    language,
    tests,
    inputs,
    expect,
    code,
    lastRun,
    critique,
    errors,
    usage,
    notes,
    candidate: spec,
    latestFingerprint: state.history.at(-1)?.fingerprint,
    disagreement: choice?.disagreement,
  };
}

/** A candidate that wrote nothing to run: it still takes its place in the round, as a failure. */
function withoutProgram(spec: CandidateSpec, run: Execution, tokens: number, stop?: CandidateOutcome["stop"]) {
  const behaviour = behaviourOfRun(run);
  const outcome: CandidateOutcome = {
    round: spec.round,
    index: spec.index,
    kind: spec.kind,
    code: "",
    hasCode: false,
    run,
    passed: false,
    outcome: run.error?.type ?? "NoCodeError",
    score: 0,
    tokens,
    behaviour: behaviour.digest,
    shows: behaviour.shows,
  };
  if (stop) outcome.stop = stop;
  return outcome;
}

/**
 * One candidate of a round, start to verdict: write a program (fresh, or a repair of the chosen one),
 * run it, judge it with the one verdict, and record what it did on the task's inputs. It returns
 * only to reducer channels (`candidates`, `usage`, `notes`), since k of them write in one step.
 */
export function createCandidateNode(deps: NodeDeps, slots: SandboxSlots) {
  return async (input: CandidateTask, runtime: AgentRuntime): Promise<AgentUpdate> => {
    const settings = runtime.context;
    const spec = input.candidate;
    const repair = spec.kind === "repair" ? input.lastRun : undefined;
    const written = await writeAttempt({
      deps,
      node: "candidate",
      source: input,
      request: repair
        ? { kind: "repair", run: repair, latestFingerprint: input.latestFingerprint, disagreement: input.disagreement }
        : { kind: "fresh" },
      runtime,
      // The share reserved before the fan-out: the k calls made at once cannot overrun the budget.
      tokenBudget: spec.tokenBudget,
    });
    if (written.kind === "stop") {
      const stop = { status: written.status, reason: written.reason };
      const type = written.status === "invalid_input" ? "InputUnavailable" : "CandidateStopped";
      return { candidates: [withoutProgram(spec, notRun(type, stop.reason), 0, stop)] };
    }
    const usage = [written.usage];
    if (written.kind === "noCode") {
      const run = notRun("NoCodeError", written.problem);
      return { usage, candidates: [withoutProgram(spec, run, written.tokens)] };
    }
    const tokens = written.tokens;
    const notes: Note[] = written.note ? [{ source: "candidate", attempt: spec.round, message: written.note }] : [];

    const program = { code: written.code, tests: input.tests, language: input.language, inputs: input.inputs };
    const slotKey = slotKeyOf(runtime);
    const executed = await slots(slotKey, settings.sandboxConcurrency, () =>
      executeProgram(deps, { ...program, notes: input.notes }, runtime, spec.round, spec.index),
    );
    notes.push(...(executed.notes ?? []));
    const run = executed.lastRun;
    const hasTests = Boolean(input.tests?.trim());
    const { critique, failure } = judgeWithArtifacts({ run, hasTests, expect: input.expect, attempt: spec.round });
    let behaviour: Behaviour =
      critique.passed && hasTests ? { digest: "passes", shows: "passes the tests" } : behaviourOfRun(run);
    if (!critique.passed && canProbe(input.language, input.tests)) {
      const probeSource = pythonBehaviourProbe(written.code, input.tests);
      // The probe is ours, not an attempt: nothing of it is streamed, and its artifacts are not kept.
      const quiet: AgentRuntime = { ...runtime, writer: undefined, context: { ...settings, artifactsDir: null } };
      const probed = { ...program, code: probeSource, tests: undefined, notes: input.notes };
      const probe = await slots(slotKey, settings.sandboxConcurrency, () =>
        executeProgram(deps, probed, quiet, spec.round),
      );
      behaviour = behaviourOfProbe(probe.lastRun);
    }
    const outcome: CandidateOutcome = {
      round: spec.round,
      index: spec.index,
      kind: spec.kind,
      code: written.code,
      hasCode: true,
      run,
      passed: critique.passed,
      outcome: failure?.type ?? "passed",
      score: scoreAttempt(run, critique.passed),
      tokens,
      behaviour: behaviour.digest,
      shows: behaviour.shows,
    };
    return { usage, notes, candidates: [outcome] };
  };
}
