import type { AgentState } from "../core/state.js";
import { dataFilesSection } from "./data-files.js";
import { buildGeneratorPrompt, type RewriteContext } from "./generator.prompt.js";
import { summarizeErrors } from "./prompt-parts.js";
import type { AgentNode, NodeDeps } from "./types.js";
import { writeProgram, writtenUpdate } from "./write-program.js";

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
    const settings = runtime.context;
    // Checked before the first model call, so a missing or oversized input costs no tokens.
    const dataFiles = await dataFilesSection(state, settings);
    if ("invalid" in dataFiles) return dataFiles.invalid;
    const rewrite = rewriteContext(state);
    const written = await writeProgram({
      node: "generator",
      getModel: () => deps.resolveModel("generator", settings),
      messages: buildGeneratorPrompt({
        task: state.task,
        language: state.language,
        rewrite: rewrite?.context,
        dataFiles: dataFiles.section,
      }),
      state,
      settings,
      signal: runtime.signal,
    });
    const update = writtenUpdate("generator", written, state.attempt + 1);
    if (!rewrite?.fingerprint) return update;
    return { ...update, rewrittenFor: [...state.rewrittenFor, rewrite.fingerprint] };
  };
}
