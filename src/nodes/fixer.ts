import { writeAttempt } from "./attempt.js";
import type { AgentNode, NodeDeps } from "./types.js";
import { writtenUpdate } from "./write-program.js";

/** Repairs the current program from a compact context; never from the growing chat history. */
export function createFixerNode(deps: NodeDeps): AgentNode {
  return async (state, runtime) => {
    const run = state.lastRun;
    if (!run) throw new Error("fixer reached without an execution result; check the graph's edges");
    const choice = state.candidateChoice?.round === state.attempt ? state.candidateChoice : undefined;
    const written = await writeAttempt({
      deps,
      node: "fixer",
      source: state,
      request: {
        kind: "repair",
        run,
        latestFingerprint: state.history.at(-1)?.fingerprint,
        disagreement: choice?.disagreement,
      },
      runtime,
    });
    return writtenUpdate("fixer", written, state.attempt + 1);
  };
}
