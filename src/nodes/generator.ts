import type { AgentState } from "../core/state.js";
import { writeAttempt } from "./attempt.js";
import type { RewriteContext } from "./generator.prompt.js";
import { summarizeErrors } from "./prompt-parts.js";
import type { AgentNode, NodeDeps } from "./types.js";
import { writtenUpdate } from "./write-program.js";

/** After a failed run the generator is only re-entered for a fresh rewrite of a repeating error. */
function rewriteContext(state: AgentState): { context: RewriteContext; fingerprint?: string } | undefined {
  const latest = state.history.at(-1);
  if (!latest) return undefined;
  const repeated = state.errors.find((record) => record.fingerprint === latest.fingerprint);
  return {
    fingerprint: latest.fingerprint,
    context: {
      repeatedError: repeated ? `${repeated.type}: ${repeated.message} (seen ${repeated.count}x)` : latest.outcome,
      earlierErrors: summarizeErrors(state.errors),
    },
  };
}

/** Writes the first program, or a fresh one when repairs keep hitting the same error. */
export function createGeneratorNode(deps: NodeDeps): AgentNode {
  return async (state, runtime) => {
    const rewrite = rewriteContext(state);
    const written = await writeAttempt({
      deps,
      node: "generator",
      source: state,
      request: { kind: "fresh", rewrite: rewrite?.context },
      runtime,
    });
    const update = writtenUpdate("generator", written, state.attempt + 1);
    if (!rewrite?.fingerprint) return update;
    return { ...update, rewrittenFor: [...state.rewrittenFor, rewrite.fingerprint] };
  };
}
