import { Command, type StateSnapshot } from "@langchain/langgraph";
import type { AgentState } from "../core/state.js";
import type { Agent } from "./build.js";

/**
 * The steps a thread's head has not got past: those still to run, and those that ran but whose step
 * was never checkpointed. LangGraph saves a node's writes as soon as it returns and the step's
 * checkpoint after it; a process killed between the two leaves a head whose `next` is empty (it
 * lists only steps without saved writes) though the run never ended. Resuming applies the saved
 * writes and goes on without calling the node again. Steps of the second kind read `after <node>`.
 */
export function stepsLeft(snapshot: StateSnapshot): string[] {
  return snapshot.tasks.map((task) => (snapshot.next.includes(task.name) ? task.name : `after ${task.name}`));
}

/** Where a thread stands: its run's status, `awaiting approval`, or `unfinished` when it stopped (or is running) mid-way. */
export function describeStatus(snapshot: StateSnapshot): string {
  const values: Partial<AgentState> = snapshot.values;
  if (snapshot.tasks.some((task) => task.interrupts.length > 0)) return "awaiting approval";
  if (values.status && values.status !== "running") return values.status;
  const left = stepsLeft(snapshot);
  return left.length > 0 ? `unfinished (next: ${left.join(", ")})` : (values.status ?? "empty");
}

/**
 * How to continue a thread from its head:
 * - paused for approval, or stopped between steps (killed, Ctrl-C, a cancelled call), or killed
 *   after a step's writes were saved and before its checkpoint: run on from the checkpoint;
 * - ended on a model error: run the node whose call failed again, with the run marked running;
 * - ended otherwise: nothing to run.
 */
export function planResume(
  snapshot: StateSnapshot,
  agent: Agent,
): { start: Command | null } | { finished: AgentState } {
  const values: AgentState = snapshot.values;
  if (stepsLeft(snapshot).length > 0) return { start: null };
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
