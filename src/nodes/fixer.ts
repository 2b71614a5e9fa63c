import type { ModelRole } from "../tools/models.js";
import { dataFilesSection } from "./data-files.js";
import { buildFixerPrompt } from "./fixer.prompt.js";
import type { AgentNode, NodeDeps } from "./types.js";
import { writeProgram, writtenUpdate } from "./write-program.js";

/** Errors a cheap model repairs well: the traceback names the fix. */
const MECHANICAL_ERRORS =
  /^(SyntaxError|IndentationError|TabError|NameError|ReferenceError|ImportError|ModuleNotFoundError|TypeError|AttributeError|NoCodeError)$/;

/** Assertion and logic failures go to the strong fixer model when one is configured. */
export function fixerRoleFor(errorType: string | undefined): Extract<ModelRole, "fixer" | "strongFixer"> {
  return errorType && MECHANICAL_ERRORS.test(errorType) ? "fixer" : "strongFixer";
}

/** Repairs the current program from a compact context; never from the growing chat history. */
export function createFixerNode(deps: NodeDeps): AgentNode {
  return async (state, runtime) => {
    const settings = runtime.context;
    const run = state.lastRun;
    if (!run) throw new Error("fixer reached without an execution result; check the graph's edges");
    const latest = state.history.at(-1);
    const dataFiles = await dataFilesSection(state, settings);
    if ("invalid" in dataFiles) return dataFiles.invalid;
    const written = await writeProgram({
      node: "fixer",
      getModel: () => deps.resolveModel(fixerRoleFor(run.error?.type), settings),
      messages: buildFixerPrompt({
        task: state.task,
        language: state.language,
        code: state.code,
        run,
        critique: state.critique,
        errors: state.errors,
        latestFingerprint: latest?.fingerprint,
        dataFiles: dataFiles.section,
        candidates: state.candidateChoice?.round === state.attempt ? state.candidateChoice.disagreement : undefined,
      }),
      state,
      settings,
      signal: runtime.signal,
    });
    return writtenUpdate("fixer", written, state.attempt + 1);
  };
}
