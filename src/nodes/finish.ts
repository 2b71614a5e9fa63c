import { readSettings } from "../graph/context.js";
import { decideAfterCritic } from "../graph/routes.js";
import type { AgentNode } from "./types.js";

/** Records why the run ended. A node that stopped the run itself (budget, model error) already said why. */
export const finishNode: AgentNode = (state, runtime) => {
  if (state.status !== "running") return {};
  const decision = decideAfterCritic(state, readSettings(runtime.context));
  if (decision.next !== "finish") throw new Error(`finish reached while the policy says ${decision.next}; check the graph's edges`);
  return { status: decision.status, reason: decision.reason };
};
