import { Command, type StateSnapshot } from "@langchain/langgraph";
import type { AgentState } from "../core/state.js";
import type { Agent } from "./build.js";

/** Where a thread stands: its run's status, `awaiting approval`, or `unfinished` when it stopped (or is running) mid-way. */
export function describeStatus(snapshot: StateSnapshot): string {
  const values: Partial<AgentState> = snapshot.values;
  if (snapshot.tasks.some((task) => task.interrupts.length > 0)) return "awaiting approval";
  if (values.status && values.status !== "running") return values.status;
  return snapshot.next.length > 0 ? `unfinished (next: ${snapshot.next.join(", ")})` : (values.status ?? "empty");
}

/**
 * How to continue a thread from its head:
 * - paused for approval, or stopped between steps (killed, Ctrl-C, a cancelled call): run on from the checkpoint;
 * - ended on a model error: run the node whose call failed again, with the run marked running;
 * - ended otherwise: nothing to run.
 */
export function planResume(
  snapshot: StateSnapshot,
  agent: Agent,
): { start: Command | null } | { finished: AgentState } {
  const values: AgentState = snapshot.values;
  if (snapshot.next.length > 0) return { start: null };
  if (values.status === "model_error" && values.resumeFrom && values.resumeFrom in agent.nodes) {
    return {
      start: new Command({
        goto: values.resumeFrom,
        update: { status: "running", reason: undefined, resumeFrom: undefined },
      }),
    };
  }
  return { finished: values };
}
