import type { AgentUpdate, CandidateOutcome } from "../core/state.js";
import { behaviourOfProbe, pythonBehaviourProbe } from "../tools/behaviour.js";
import { type SandboxSlots, slotKeyOf } from "../tools/slots.js";
import { executeProgram } from "./executor.js";
import { keepRound } from "./join.js";
import type { AgentNode, AgentRuntime, NodeDeps } from "./types.js";

/**
 * Runs every candidate of a round in which none passed on the tests' calls and on the inputs the
 * model proposed, regroups them by what they did, and keeps the best of the largest group again.
 * The programs run as they were written; only what they return is recorded.
 */
export function createProbeNode(deps: NodeDeps, slots: SandboxSlots): AgentNode {
  return async (state, runtime) => {
    const settings = runtime.context;
    const proposed = state.proposedInputs ?? [];
    // The probe is ours, not an attempt: nothing of it is streamed, and its artifacts are not kept.
    const quiet: AgentRuntime = { ...runtime, writer: undefined, context: { ...settings, artifactsDir: null } };
    const round = (state.candidates ?? []).filter((outcome) => outcome.round === state.attempt);
    const probed = await Promise.all(
      round.map(async (outcome): Promise<CandidateOutcome> => {
        if (!outcome.hasCode || outcome.stop) return outcome;
        const program = {
          code: pythonBehaviourProbe(outcome.code, state.tests ?? "", proposed),
          tests: undefined,
          language: state.language,
          inputs: state.inputs,
          notes: state.notes,
        };
        const probe = await slots(slotKeyOf(runtime), settings.sandboxConcurrency, () =>
          executeProgram(deps, program, quiet, outcome.round),
        );
        const behaviour = behaviourOfProbe(probe.lastRun);
        return { ...outcome, behaviour: behaviour.digest, shows: behaviour.shows };
      }),
    );
    const update: AgentUpdate = { ...keepRound(state, probed), candidates: probed };
    // The round was already counted by the join; this only changes which of its programs is kept.
    delete update.attempt;
    return update;
  };
}
