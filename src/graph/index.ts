import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { END, START, StateGraph, type BaseCheckpointSaver } from "@langchain/langgraph";
import { approvalNode } from "../nodes/approval.js";
import { createCriticNode } from "../nodes/critic.js";
import { createExecutorNode } from "../nodes/executor.js";
import { finishNode } from "../nodes/finish.js";
import { createFixerNode } from "../nodes/fixer.js";
import { createGeneratorNode } from "../nodes/generator.js";
import type { NodeDeps } from "../nodes/types.js";
import { createModelResolver } from "../tools/models.js";
import { createSandbox } from "../tools/sandbox/index.js";
import type { Sandbox, SandboxKind } from "../tools/sandbox/types.js";
import { ContextSchema } from "./context.js";
import { AFTER_CRITIC_TARGETS, AFTER_WRITE_TARGETS, routeAfterCritic, routeAfterWrite } from "./routes.js";
import { State } from "./state.js";

export interface AgentOptions {
  /** Serves every role that has no model of its own. Built from the environment when absent. */
  model?: BaseChatModel;
  fixerModel?: BaseChatModel;
  /** Used for assertion and logic failures; defaults to the fixer model. */
  strongFixerModel?: BaseChatModel;
  criticModel?: BaseChatModel;
  /** A sandbox to run every program in; otherwise one is made per `sandbox` setting. */
  sandbox?: Sandbox;
  /** Any LangGraph checkpointer; required for resume and approval. */
  checkpointer?: BaseCheckpointSaver;
}

/** Sandboxes are made on first use and shared by the runs of one agent. */
function sandboxProvider(injected?: Sandbox): (kind: SandboxKind) => Sandbox {
  const made = new Map<SandboxKind, Sandbox>();
  return (kind) => {
    if (injected) return injected;
    const existing = made.get(kind);
    if (existing) return existing;
    const sandbox = createSandbox({ kind });
    made.set(kind, sandbox);
    return sandbox;
  };
}

export function createNodeDeps(options: AgentOptions = {}): NodeDeps {
  return {
    resolveModel: createModelResolver(options),
    getSandbox: sandboxProvider(options.sandbox),
  };
}

/** The uncompiled graph: generator -> executor -> critic -> (fixer -> executor ...) -> finish. */
export function buildAgentGraph(options: AgentOptions = {}) {
  const deps = createNodeDeps(options);
  return new StateGraph(State, ContextSchema)
    .addNode("generator", createGeneratorNode(deps))
    .addNode("approval", approvalNode)
    .addNode("executor", createExecutorNode(deps))
    .addNode("critic", createCriticNode(deps))
    .addNode("fixer", createFixerNode(deps))
    .addNode("finish", finishNode)
    .addEdge(START, "generator")
    .addConditionalEdges("generator", routeAfterWrite, [...AFTER_WRITE_TARGETS])
    .addEdge("approval", "executor")
    .addEdge("executor", "critic")
    .addConditionalEdges("critic", routeAfterCritic, [...AFTER_CRITIC_TARGETS])
    .addConditionalEdges("fixer", routeAfterWrite, [...AFTER_WRITE_TARGETS])
    .addEdge("finish", END);
}

/** A compiled selfheal agent; call `invoke({ task }, { context, configurable: { thread_id } })`. */
export function createAgent(options: AgentOptions = {}) {
  return buildAgentGraph(options).compile({ checkpointer: options.checkpointer, name: "selfheal" });
}

export type Agent = ReturnType<typeof createAgent>;

/** For langgraph.json: the LangGraph server brings its own checkpointer. */
export const graph = createAgent();
