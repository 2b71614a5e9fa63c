import type { Usage } from "../core/ledger.js";
import type { AgentUpdate } from "../core/state.js";
import { buildProposePrompt } from "./propose.prompt.js";
import type { AgentRuntime, NodeDeps } from "./types.js";
import { writeProgram } from "./write-program.js";

/** What the proposal is sent: the task and the share of the budget reserved for it before the fan-out. */
export interface ProposeTask {
  task: string;
  usage: Usage;
  tokenBudget: number;
}

/**
 * Once per run, beside the first round of candidates (so it adds no latency): the model proposes
 * calls to run every candidate on when none passes (see nodes/probe.ts). A failed or empty
 * proposal is no error: the tests' calls and the output still group the candidates.
 */
export function createProposeNode(deps: NodeDeps) {
  return async (input: ProposeTask, runtime: AgentRuntime): Promise<AgentUpdate> => {
    const settings = runtime.context;
    const written = await writeProgram({
      node: "propose",
      getModel: () => deps.resolveModel("generator", settings),
      messages: buildProposePrompt({ task: input.task, count: settings.proposedInputs }),
      state: { usage: input.usage, language: "python", task: input.task },
      settings: { ...settings, tokenBudget: input.tokenBudget },
      signal: runtime.signal,
    });
    const usage = written.kind === "stop" ? [] : [written.usage];
    const calls = (written.kind === "code" ? written.code : "")
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line !== "" && !line.startsWith("#"))
      .slice(0, settings.proposedInputs);
    return { usage, proposedInputs: calls };
  };
}
