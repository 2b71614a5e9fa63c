import type { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { Command } from "@langchain/langgraph";
// The queue runs the agent as a user's code would, through the public entry: nothing below it.
import {
  type Agent,
  type AgentState,
  checkSandbox,
  createAgent,
  driveRun,
  parseSettings,
  planResume,
  type RunInput,
  type RunStop,
  type Settings,
  type SharedSandboxes,
} from "../internal.js";
import { type RunStore, withThreadLease } from "../store/index.js";
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
   * The worker's sandboxes, by kind and pool size, shared by its jobs: a sandbox keeps interpreters
   * warm after first use, which a sandbox made per job would throw away.
   */
  sandboxes?: SharedSandboxes;
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

/** Stands for a model or sandboxes left out, as a key of `agents`. */
const NONE = {};
/** Compiled agents by checkpointer, then model, then sandboxes. */
const agents = new WeakMap<object, WeakMap<object, WeakMap<object, Agent>>>();

/**
 * The agent for these parts, compiled once and shared by the jobs that use them (a compiled graph
 * holds no run's state): compiling it again for each job cost a millisecond or two of the worker's
 * CPU. Weakly held, so a store, model or sandbox let go of takes its agents with it.
 */
function agentFor(checkpointer: RunStore["checkpointer"], model?: BaseChatModel, sandboxes?: SharedSandboxes): Agent {
  const byModel = agents.get(checkpointer) ?? new WeakMap<object, WeakMap<object, Agent>>();
  const bySandbox = byModel.get(model ?? NONE) ?? new WeakMap<object, Agent>();
  const agent = bySandbox.get(sandboxes ?? NONE) ?? createAgent({ model, checkpointer, sandboxes });
  bySandbox.set(sandboxes ?? NONE, agent);
  byModel.set(model ?? NONE, bySandbox);
  agents.set(checkpointer, byModel);
  return agent;
}

/**
 * Runs one delivered job: the job's thread from its input, or on from its last checkpoint when an
 * earlier delivery got part of the way (its finished steps and model calls are not made again).
 * Returns the outcome of a run that ended; throws EnvironmentFailure for one that could not.
 */
export async function runQueuedThread(delivery: Delivery, deps: QueuedRunDeps): Promise<QueuedRunOutcome> {
  const { threadId, input } = delivery.data;
  const { store } = deps;
  // A job taken while the database is away waits for it as its run would, rather than failing a
  // delivery whose failure pg-boss could not record either (the job would then sit until it expired).
  const defaultWait = parseSettings({}).storeWaitSeconds;
  const record = await store.patiently("reading the run", () => store.getRun(threadId), defaultWait);
  const settings = record?.settings ?? parseSettings({});
  await checkSandbox({ kind: settings.sandbox, ...(input?.language ? { languages: [input.language] } : {}) });
  // Two deliveries of one job overlap when a slow worker outlives its expiry: the lease keeps the
  // second off the thread (it throws, and pg-boss tries again later).
  return withThreadLease(
    store,
    threadId,
    async () => {
      const agent = agentFor(store.checkpointer, deps.model ?? deps.modelFor?.(settings), deps.sandboxes);
      const config = { configurable: { thread_id: threadId } };
      const head = await store.patiently(
        "reading the last checkpoint",
        () => agent.getState(config),
        settings.storeWaitSeconds,
      );
      let start: RunInput | Command | null = input;
      if (head.createdAt) {
        const plan = planResume(head, agent);
        if ("finished" in plan) return { ...outcomeOf(plan.finished, threadId, false), alreadyFinished: true };
        start = plan.start;
      }
      // The last state comes with the events: reading it back from the checkpoints after the run
      // cost a query and a deserialization on every job's path.
      let stop: RunStop;
      try {
        const options = { context: settings, threadId, signal: delivery.signal, callbacks: deps.callbacks };
        stop = await driveRun(agent, start, options, (event) => {
          if (event.kind !== "updated") return;
          delivery.setStep(event.node);
          deps.onStep?.(event.node);
        });
      } catch (error) {
        if (delivery.signal.aborted) {
          throw new EnvironmentFailure(`stopped: ${(delivery.signal.reason as Error)?.message ?? "aborted"}`);
        }
        throw error;
      }
      if (stop.state.status === "model_error")
        throw new EnvironmentFailure(stop.state.reason ?? "the model call failed");
      return outcomeOf(stop.state, threadId, stop.paused);
    },
    { waitSeconds: settings.storeWaitSeconds },
  );
}
