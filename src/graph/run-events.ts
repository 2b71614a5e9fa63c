import type { Callbacks } from "@langchain/core/callbacks/manager";
import { type Command, isInterrupted } from "@langchain/langgraph";
import type { Settings } from "../core/settings.js";
import type { AgentState, AgentUpdate, RunInput } from "../core/state.js";
import type { ApprovalRequest } from "../nodes/approval.js";
import type { OutputEvent } from "../nodes/executor.js";
import type { Agent } from "./build.js";

/** What a run starts from: a new run's input, a Command (a resume, a goto), or null (go on). */
export type RunStart = RunInput | Command | null;

/** What a run's stream says, one part at a time, in the order the run did it. */
export type RunEvent =
  /** A line the program printed, live (with `output`). */
  | { kind: "output"; event: OutputEvent }
  /** A node began its step (with `tasks`). */
  | { kind: "started"; node: string }
  /** A node's update, as it returned it. */
  | { kind: "updated"; node: string; update: AgentUpdate }
  /** The whole state after a step, and the nodes whose step it was. */
  | { kind: "state"; state: AgentState; nodes: string[] }
  /** The run paused in `interrupt()` before an execution, asking for approval. */
  | { kind: "paused"; request: ApprovalRequest | undefined };

export interface RunEventsOptions {
  context: Settings;
  /** The thread to run in; needs an agent with a checkpointer. */
  threadId?: string;
  signal?: AbortSignal;
  callbacks?: Callbacks;
  /** Also stream each line the program prints (`output` events). */
  output?: boolean;
  /** Also stream each node's start (`started` events). */
  tasks?: boolean;
}

/**
 * One run of `agent` from `start` to its end or a pause, as events: the one `agent.stream` loop
 * of every front end (the CLI, MCP, the queue's workers, the benchmark). Each checkpoint is written
 * before the next step starts (`durability: "sync"`), so a process killed at any moment loses at
 * most the step it was in.
 */
export async function* runEvents(agent: Agent, start: RunStart, options: RunEventsOptions): AsyncGenerator<RunEvent> {
  const stream = await agent.stream(start, {
    context: options.context,
    configurable: options.threadId ? { thread_id: options.threadId } : {},
    streamMode: [
      "updates",
      "values",
      ...(options.output ? (["custom"] as const) : []),
      ...(options.tasks ? (["tasks"] as const) : []),
    ],
    durability: "sync",
    signal: options.signal,
    callbacks: options.callbacks,
  });
  // The node names come only with updates, each step's before its values.
  let nodes: string[] = [];
  for await (const [mode, chunk] of stream) {
    if (mode === "custom") {
      if (isOutputEvent(chunk)) yield { kind: "output", event: chunk };
    } else if (mode === "tasks") {
      if (isTaskStart(chunk)) yield { kind: "started", node: chunk.name };
    } else if (mode === "updates") {
      for (const [node, update] of Object.entries(chunk as Record<string, unknown>)) {
        if (node === "__interrupt__" || !update || typeof update !== "object") continue;
        nodes.push(node);
        yield { kind: "updated", node, update: update as AgentUpdate };
      }
    } else if (mode === "values") {
      // When the graph pauses, its last values chunk carries only `__interrupt__`; the state is the one before it.
      if (isInterrupted<ApprovalRequest>(chunk)) yield { kind: "paused", request: chunk.__interrupt__[0]?.value };
      else yield { kind: "state", state: chunk as AgentState, nodes };
      nodes = [];
    }
  }
}

function isOutputEvent(chunk: unknown): chunk is OutputEvent {
  return typeof chunk === "object" && chunk !== null && "kind" in chunk && chunk.kind === "output";
}

/** A `tasks` chunk that starts a node; the one that ends it carries its result instead. */
function isTaskStart(chunk: unknown): chunk is { name: string; input: unknown } {
  return typeof chunk === "object" && chunk !== null && "name" in chunk && "input" in chunk && !("result" in chunk);
}

/** Where a run stands when its stream ends: its last state, and whether it paused for approval (and on what). */
export interface RunStop {
  state: AgentState;
  paused: boolean;
  request?: ApprovalRequest;
}

/**
 * Drives a run from `start` to its end or a pause, handing each event to `onEvent` as it comes, and
 * says where it stopped: the one run loop every front end calls with the settings it parsed once.
 * A resume that goes straight into a pause may stream no whole state: its thread's checkpoint has it.
 */
export async function driveRun(
  agent: Agent,
  start: RunStart,
  options: RunEventsOptions,
  onEvent?: (event: RunEvent) => void | Promise<void>,
): Promise<RunStop> {
  let state: AgentState | undefined;
  let paused = false;
  let request: ApprovalRequest | undefined;
  for await (const event of runEvents(agent, start, options)) {
    if (event.kind === "state") state = event.state;
    else if (event.kind === "paused") {
      paused = true;
      request = event.request;
    }
    await onEvent?.(event);
  }
  if (!state) {
    if (!options.threadId) throw new Error("the run produced no state");
    const snapshot = await agent.getState({ configurable: { thread_id: options.threadId } });
    state = snapshot.values as AgentState;
    const waiting = snapshot.tasks.flatMap((task) => task.interrupts)[0];
    if (waiting) {
      paused = true;
      request ??= waiting.value as ApprovalRequest | undefined;
    }
  }
  return { state, paused, ...(request ? { request } : {}) };
}
