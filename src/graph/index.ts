import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { END, START, StateGraph, type BaseCheckpointSaver, type StateDefinitionInit } from "@langchain/langgraph";
import { approvalNode } from "../nodes/approval.js";
import { createCriticNode } from "../nodes/critic.js";
import { createExecutorNode } from "../nodes/executor.js";
import { finishNode } from "../nodes/finish.js";
import { createFixerNode } from "../nodes/fixer.js";
import { createGeneratorNode } from "../nodes/generator.js";
import type { AgentNode, NodeDeps } from "../nodes/types.js";
import { createModelResolver } from "../tools/models.js";
import { createSandbox } from "../tools/sandbox/index.js";
import type { Sandbox, SandboxKind } from "../tools/sandbox/types.js";
import { ContextSchema } from "./context.js";
import { stagedSteps, type AgentExtensions, type CoreNodeName } from "./extensions.js";
import { AFTER_CRITIC_TARGETS, routeAfterCritic, routeAfterWrite } from "./routes.js";
import { State } from "./state.js";

export interface AgentOptions extends AgentExtensions {
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

/**
 * The uncompiled graph: generator -> [before steps] -> approval -> executor -> [after steps] ->
 * critic -> (fixer -> ... | finish). Add nodes, edges or a checkpointer, then `compile()`.
 */
export function buildAgentGraph(options: AgentOptions = {}) {
  const deps = createNodeDeps(options);
  const core: Record<CoreNodeName, AgentNode> = {
    generator: createGeneratorNode(deps),
    approval: approvalNode,
    executor: createExecutorNode(deps),
    critic: createCriticNode(deps),
    fixer: createFixerNode(deps),
    finish: finishNode,
  };
  const node = (name: CoreNodeName) => options.replace?.[name]?.(deps, core[name]) ?? core[name];
  const { before, after } = stagedSteps(options, deps);
  const towardsExecution = [...before.map((step) => step.name), "approval"];
  const towardsCritic = ["executor", ...after.map((step) => step.name), "critic"];
  // Written programs enter the first step before execution; Studio draws this path map as edges.
  const afterWrite = { approval: towardsExecution[0]!, finish: "finish" };

  const graph = widenNodeNames(
    new StateGraph(State, ContextSchema)
      .addNode("generator", node("generator"))
      .addNode("approval", node("approval"))
      .addNode("executor", node("executor"))
      .addNode("critic", node("critic"))
      .addNode("fixer", node("fixer"))
      .addNode("finish", node("finish")),
  );
  for (const step of [...before, ...after]) graph.addNode(step.name, step.node);
  graph.addEdge(START, "generator");
  graph.addConditionalEdges("generator", routeAfterWrite, afterWrite);
  graph.addConditionalEdges("fixer", routeAfterWrite, afterWrite);
  chain(graph, [...towardsExecution, ...towardsCritic]);
  graph.addConditionalEdges("critic", routeAfterCritic, [...AFTER_CRITIC_TARGETS]);
  graph.addEdge("finish", END);
  return graph;
}

/** Extra nodes are named by the caller at run time, so past the core nodes the builder takes any name. */
function widenNodeNames<SD, S, U, N extends string, I extends StateDefinitionInit, O extends StateDefinitionInit, C extends StateDefinitionInit>(
  graph: StateGraph<SD, S, U, N, I, O, C>,
): StateGraph<SD, S, U, string, I, O, C> {
  return graph;
}

function chain(graph: { addEdge(from: string, to: string): unknown }, names: string[]): void {
  names.slice(1).forEach((name, index) => graph.addEdge(names[index]!, name));
}

/** A compiled selfheal agent; call `invoke({ task }, { context, configurable: { thread_id } })`. */
export function createAgent(options: AgentOptions = {}) {
  return buildAgentGraph(options).compile({ checkpointer: options.checkpointer, name: "selfheal" });
}

export type Agent = ReturnType<typeof createAgent>;

/** For langgraph.json: the LangGraph server brings its own checkpointer. */
export const graph = createAgent();
