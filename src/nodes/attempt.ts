import type { AgentState, Execution } from "../core/state.js";
import type { ModelRole } from "../tools/models.js";
import { dataFilesSection } from "./data-files.js";
import { buildFixerPrompt } from "./fixer.prompt.js";
import { buildGeneratorPrompt, type RewriteContext } from "./generator.prompt.js";
import type { AgentRuntime, NodeDeps } from "./types.js";
import { type Written, writeProgram } from "./write-program.js";

// One attempt is write -> run -> judge, and every path takes its three steps from here and its
// neighbours: the write (writeAttempt, below), the run (executeProgram, executor.ts) and the
// judgement (judgeWithArtifacts, artifact-check.ts). The single path spreads them over the
// generator or fixer, the approval gate, the executor and the critic, so a person and the
// extensions can step in between; a candidate takes all three in one node, k at once.

/** Errors a cheap model repairs well: the traceback names the fix. */
const MECHANICAL_ERRORS =
  /^(SyntaxError|IndentationError|TabError|NameError|ReferenceError|ImportError|ModuleNotFoundError|TypeError|AttributeError|NoCodeError)$/;

/** Assertion and logic failures go to the strong fixer model when one is configured. */
export function fixerRoleFor(errorType: string | undefined): Extract<ModelRole, "fixer" | "strongFixer"> {
  return errorType && MECHANICAL_ERRORS.test(errorType) ? "fixer" : "strongFixer";
}

/** What an attempt's program is written as: a fresh one (a rewrite after a repeating error, too), or a repair of the last run. */
export type WriteRequest =
  | { kind: "fresh"; rewrite?: RewriteContext }
  | {
      kind: "repair";
      run: Execution;
      /** The fingerprint of the last error, so the prompt's list of earlier errors leaves it out. */
      latestFingerprint?: string;
      /** How the last round's candidates disagreed, one group a line. */
      disagreement?: string;
    };

/** What the write step reads of the state: the task, its files, the program to repair and what failed it. */
export type AttemptSource = Pick<
  AgentState,
  "task" | "language" | "inputs" | "expect" | "code" | "critique" | "errors" | "usage"
>;

/**
 * The write step of every attempt: the input files checked (a missing or oversized one stops the
 * run before any tokens are spent), the generator's or the fixer's prompt, the model for that role,
 * and the call. `tokenBudget`: a candidate's share of the budget, reserved before the fan-out.
 */
export async function writeAttempt(args: {
  deps: NodeDeps;
  node: string;
  source: AttemptSource;
  request: WriteRequest;
  runtime: AgentRuntime;
  tokenBudget?: number;
}): Promise<Written> {
  const { deps, source, request, runtime } = args;
  const settings = runtime.context;
  const dataFiles = await dataFilesSection(source, settings);
  if ("invalid" in dataFiles) return { kind: "stop", status: "invalid_input", reason: dataFiles.invalid };
  const role = request.kind === "repair" ? fixerRoleFor(request.run.error?.type) : "generator";
  const messages =
    request.kind === "repair"
      ? buildFixerPrompt({
          task: source.task,
          language: source.language,
          code: source.code,
          run: request.run,
          critique: source.critique,
          errors: source.errors,
          latestFingerprint: request.latestFingerprint,
          dataFiles: dataFiles.section,
          candidates: request.disagreement,
          allowHosts: settings.allowHosts,
        })
      : buildGeneratorPrompt({
          task: source.task,
          language: source.language,
          rewrite: request.rewrite,
          dataFiles: dataFiles.section,
          allowHosts: settings.allowHosts,
        });
  return writeProgram({
    node: args.node,
    getModel: () => deps.resolveModel(role, settings),
    messages,
    state: source,
    settings: args.tokenBudget === undefined ? settings : { ...settings, tokenBudget: args.tokenBudget },
    signal: runtime.signal,
  });
}
