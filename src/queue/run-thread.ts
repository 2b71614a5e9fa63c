import type { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { Command } from "@langchain/langgraph";
// The queue runs the agent as a user's code would, through the public entry: nothing below it.
import {
  type AgentState,
  checkSandbox,
  createAgent,
  parseSettings,
  planResume,
  type RunInput,
  type Sandbox,
  type SandboxKind,
  type Settings,
} from "../index.js";
import type { RunStore } from "../store/index.js";
import type { Delivery } from "./task-queue.js";

/** What a finished job reports: pg-boss stores it as the job's output, `runs` and the worker log show it. */
export interface QueuedRunOutcome {
  threadId: string;
  status: AgentState["status"] | "awaiting_approval";
  attempts: number;
  tokens: number;
  /** True when an earlier delivery had already run the thread to its end and only the job was left open. */
  alreadyFinished?: boolean;
}

/**
 * The error a delivery throws for a reason outside the run (the model server, the sandbox, the
 * database, a cancellation or expiry): pg-boss retries it with backoff and then dead-letters it
 * with this message. A run that ends failed or stuck is an answer, not one of these.
 */
export class EnvironmentFailure extends Error {
  override name = "EnvironmentFailure";
}

export interface QueuedRunDeps {
  store: RunStore;
  /** A model for every role, for tests and benchmarks; otherwise built from the environment by the run's settings. */
  model?: BaseChatModel;
  /**
   * A model for a run's settings when `model` is not given, or undefined to build it from the
   * environment: the CLI brings back its scripted demo model for a run recorded with that name.
   */
  modelFor?: (settings: Settings) => BaseChatModel | undefined;
  /** Passed to the run, so they see every model call (the shared rate limit). */
  callbacks?: BaseCallbackHandler[];
  /**
   * The worker's sandboxes, one per kind, shared by its jobs: a sandbox keeps interpreters warm
   * after first use, which a sandbox made per job would throw away.
   */
  sandboxFor?: (kind: SandboxKind) => Sandbox;
  /** Called after each step, with the node that ran. */
  onStep?: (node: string) => void;
}

function outcomeOf(state: AgentState, threadId: string, awaitingApproval: boolean): QueuedRunOutcome {
  return {
    threadId,
    status: awaitingApproval ? "awaiting_approval" : state.status,
    attempts: state.attempt,
    tokens: state.usage.totalTokens,
  };
}

/**
 * Runs one delivered job: the job's thread from its input, or on from its last checkpoint when an
 * earlier delivery got part of the way (its finished steps and model calls are not made again).
 * Returns the outcome of a run that ended; throws EnvironmentFailure for one that could not.
 */
export async function runQueuedThread(delivery: Delivery, deps: QueuedRunDeps): Promise<QueuedRunOutcome> {
  const { threadId, input } = delivery.data;
  const { store } = deps;
  const record = await store.getRun(threadId);
  const settings = record?.settings ?? parseSettings({});
  await checkSandbox({ kind: settings.sandbox });
  // Two deliveries of one job overlap when a slow worker outlives its expiry: the lease keeps the
  // second off the thread (it throws, and pg-boss tries again later).
  const lease = await store.lease(threadId);
  try {
    const agent = createAgent({
      model: deps.model ?? deps.modelFor?.(settings),
      checkpointer: store.checkpointer,
      sandbox: deps.sandboxFor?.(settings.sandbox),
    });
    const config = { configurable: { thread_id: threadId } };
    const head = await agent.getState(config);
    let start: RunInput | Command | null = input;
    if (head.createdAt) {
      const plan = planResume(head, agent);
      if ("finished" in plan) return { ...outcomeOf(plan.finished, threadId, false), alreadyFinished: true };
      start = plan.start;
    }
    const stream = await agent.stream(start, {
      ...config,
      context: settings,
      streamMode: "updates",
      // Each checkpoint is written before the next step starts: a killed worker loses one step at most.
      durability: "sync",
      signal: delivery.signal,
      callbacks: deps.callbacks,
    });
    try {
      for await (const chunk of stream) {
        for (const node of Object.keys(chunk)) {
          if (node === "__interrupt__") continue;
          delivery.setStep(node);
          deps.onStep?.(node);
        }
      }
    } catch (error) {
      if (delivery.signal.aborted) {
        throw new EnvironmentFailure(`stopped: ${(delivery.signal.reason as Error)?.message ?? "aborted"}`);
      }
      throw error;
    }
    const final = await agent.getState(config);
    const state: AgentState = final.values;
    if (state.status === "model_error") throw new EnvironmentFailure(state.reason ?? "the model call failed");
    return outcomeOf(state, threadId, final.next.length > 0);
  } finally {
    await lease.release();
  }
}
