import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import {
  type BaseCheckpointSaver,
  END,
  type GraphNode,
  isCommand,
  type LangGraphRunnableConfig,
  Send,
  START,
  StateGraph,
} from "@langchain/langgraph";
import type { ZodError, ZodObject } from "zod";
import { planRound, proposesInputs } from "../core/candidates.js";
import { InvalidSettingsError, ThreadHasRunError } from "../core/errors.js";
import { checkRunInput } from "../core/run-input.js";
import {
  type ContextChannels,
  formatIssues,
  MAX_ATTEMPTS_LIMIT,
  parseSettings,
  type SettingsInput,
} from "../core/settings.js";
import { type AgentState, type AgentUpdate, State } from "../core/state.js";
import { approvalNode } from "../nodes/approval.js";
import { type CandidateTask, candidateTask, createCandidateNode } from "../nodes/candidate.js";
import { createCriticNode } from "../nodes/critic.js";
import { createExecutorNode } from "../nodes/executor.js";
import { finishNode } from "../nodes/finish.js";
import { createFixerNode } from "../nodes/fixer.js";
import { createGeneratorNode } from "../nodes/generator.js";
import { joinNode } from "../nodes/join.js";
import { createProbeNode } from "../nodes/probe.js";
import { createProposeNode, type ProposeTask } from "../nodes/propose.js";
import type { AgentNode, NodeDeps } from "../nodes/types.js";
import { SharedSandboxes } from "../sandbox/index.js";
import type { Sandbox } from "../sandbox/types.js";
import { createModelResolver } from "../tools/models.js";
import { ModelCallLog, type ModelCallsMode } from "../tools/recorded-model.js";
import { sandboxSlots } from "../tools/slots.js";
import {
  type AgentExtensions,
  CORE_NODES,
  type CoreNodeName,
  FAN_OUT_NODES,
  type StagedSteps,
  stagedSteps,
} from "./extensions.js";
import {
  AFTER_JOIN_TARGETS,
  AFTER_ROUND_TARGETS,
  routeAfterJoin,
  routeAfterWrite,
  routeFromStart,
  routeNextRound,
  routeTowardsExecution,
  START_TARGETS,
  TOWARDS_EXECUTION_TARGETS,
} from "./routes.js";

export interface AgentOptions extends AgentExtensions {
  /** Serves every role that has no model of its own. Built from the environment when absent. */
  model?: BaseChatModel;
  fixerModel?: BaseChatModel;
  /** Used for assertion and logic failures; defaults to the fixer model. */
  strongFixerModel?: BaseChatModel;
  criticModel?: BaseChatModel;
  /** A sandbox to run every program in; otherwise one is made per `sandbox` setting. */
  sandbox?: Sandbox;
  /**
   * Where the sandboxes per `sandbox` and `sandboxPoolSize` setting come from when `sandbox` is not
   * given: pass one to several agents (a server's, a worker's) to share warm interpreters, and close
   * it yourself. Each agent makes its own otherwise.
   */
  sandboxes?: SharedSandboxes;
  /** Any LangGraph checkpointer; required for resume and approval. */
  checkpointer?: BaseCheckpointSaver;
  /**
   * `{ record: dir }` writes every model request and reply to `dir`; `{ replay: dir }` answers
   * from it with no model and no network, and a request it does not hold fails the call.
   */
  modelCalls?: ModelCallsMode;
}

/** The injected sandbox for every run, else the run's kind and pool size from shared ones. */
function sandboxProvider(injected: Sandbox | undefined, shared: SharedSandboxes): NodeDeps["getSandbox"] {
  return (kind, poolSize) => injected ?? shared.get(kind, poolSize);
}

export function createNodeDeps(options: AgentOptions = {}): NodeDeps {
  return {
    resolveModel: createModelResolver(options, options.modelCalls && new ModelCallLog(options.modelCalls)),
    getSandbox: sandboxProvider(options.sandbox, options.sandboxes ?? new SharedSandboxes()),
  };
}

/**
 * Nodes see the run's settings with every default filled in: LangGraph validates nothing here
 * (the context schema is a type only) and fills in no defaults, so this is the one place that does.
 */
export function withSettings(node: AgentNode): GraphNode<typeof State, SettingsInput> {
  return (state, config) => node(state, { ...config, context: parseSettings(config.context) });
}

/**
 * Super-steps one attempt can take: a writer, the extra steps, the approval gate, the executor, the
 * critic (`finish` runs once, within the backstop's slack). A round of candidates takes three
 * (candidate, join, critic), so the same bound covers rounds.
 */
export function stepsPerAttempt(extraSteps: number): number {
  return 4 + extraSteps;
}

/**
 * A backstop only: the routers end every run (failed at maxAttempts, budget, stuck) well before
 * it. It fits the largest valid maxAttempts with room for a resume and for time travel.
 */
export function recursionLimitFor(extraSteps: number): number {
  return (MAX_ATTEMPTS_LIMIT + 1) * stepsPerAttempt(extraSteps) + 10;
}

/**
 * How the graph is declared where the dev server introspects it (see studio.ts): the same state as
 * a zod object whose reducers sit in LangGraph's zod registry, the input a person gives, and the
 * settings as the context schema.
 */
export interface IntrospectedDeclaration {
  state: ZodObject;
  input: ZodObject;
  context: ZodObject;
}

/** The graph's builder. Its node names are any string: past the core nodes, the caller names the extra steps at run time. */
type AgentGraphBuilder = StateGraph<
  typeof State,
  AgentState,
  AgentUpdate,
  string,
  typeof State,
  typeof State,
  ContextChannels
>;

/** The graph's builder, declared from the StateSchema, or from `declaration` where one is given. */
function declareGraph(declaration?: IntrospectedDeclaration): AgentGraphBuilder {
  if (!declaration) return new StateGraph(State) as AgentGraphBuilder;
  // The zod declaration builds the same channels (reducers and defaults) as State; its static type
  // stays State's, the one the nodes are written against, since a zod object's inferred type would
  // lose the reducers' update types.
  return new StateGraph(declaration.state, {
    input: declaration.input,
    context: declaration.context,
  }) as unknown as AgentGraphBuilder;
}

/** The sends that start a round of candidates: k candidates, and the proposer of inputs once per run. */
type FanOut = (state: AgentState, config: LangGraphRunnableConfig) => Send[];

/**
 * The uncompiled graph, as the README draws it: generator -> [before steps] -> (approval, when on)
 * -> executor -> [after steps] -> critic -> fixer | generator (a fresh rewrite) | finish -> END; a
 * writer that stops the run (budget, model error) goes to finish too. With `candidates` > 1:
 * START -> k x candidate (+ propose, once) -> join -> (probe) -> critic, and resample/mixed rounds
 * go back to the candidates from the critic (see core/candidates.ts). Add nodes, edges or a
 * checkpointer, then `compile()`; `createAgent` also sets the recursion limit.
 */
export function buildAgentGraph(options: AgentOptions = {}, declaration?: IntrospectedDeclaration) {
  const deps = createNodeDeps(options);
  const graph = declareGraph(declaration);
  const steps = stagedSteps(options, deps);
  addAttemptNodes(graph, options, deps, steps);
  const fanOut = addCandidateRound(graph, deps);
  addAttemptEdges(graph, steps, fanOut);
  return graph;
}

/** The single path's nodes (each replaceable through `options.replace`) and the extensions' steps. */
function addAttemptNodes(graph: AgentGraphBuilder, options: AgentOptions, deps: NodeDeps, steps: StagedSteps): void {
  const core: Record<CoreNodeName, AgentNode> = {
    generator: createGeneratorNode(deps),
    approval: approvalNode,
    executor: createExecutorNode(deps),
    critic: createCriticNode(deps),
    fixer: createFixerNode(deps),
    finish: finishNode,
  };
  for (const name of CORE_NODES)
    graph.addNode(name, withSettings(options.replace?.[name]?.(deps, core[name]) ?? core[name]));
  for (const step of [...steps.before, ...steps.after]) graph.addNode(step.name, withSettings(step.node));
}

/**
 * A round of candidates: k `Send`s to one node, each with its share of the budget reserved here,
 * before any call; LangGraph runs them in one super-step and the join after all have returned.
 * Returns the fan-out that starts a round, for START and the critic.
 */
function addCandidateRound(graph: AgentGraphBuilder, deps: NodeDeps): FanOut {
  const slots = sandboxSlots();
  const candidate = createCandidateNode(deps, slots);
  const propose = createProposeNode(deps);
  graph.addNode("candidate", (task: CandidateTask, config: LangGraphRunnableConfig) =>
    candidate(task, { ...config, context: parseSettings(config.context) }),
  );
  graph.addNode("propose", (task: ProposeTask, config: LangGraphRunnableConfig) =>
    propose(task, { ...config, context: parseSettings(config.context) }),
  );
  graph.addNode("join", withSettings(joinNode));
  graph.addNode("probe", withSettings(createProbeNode(deps, slots)));
  graph.addEdge("candidate", "join");
  graph.addEdge("propose", "join");
  graph.addConditionalEdges("join", routeAfterJoin, [...AFTER_JOIN_TARGETS]);
  graph.addEdge("probe", "critic");
  return (state, config) => {
    const settings = parseSettings(config.context);
    const asking = proposesInputs(state, settings);
    const specs = planRound(state, settings, asking ? 1 : 0);
    const sends: Send[] = specs.map((spec) => new Send("candidate", candidateTask(state, spec)));
    const share = specs[0]?.tokenBudget ?? state.usage.totalTokens;
    if (asking) sends.push(new Send("propose", { task: state.task, usage: state.usage, tokenBudget: share }));
    return sends;
  };
}

/** The loop: START -> a writer or a round; writer -> [before] -> approval -> executor -> [after] -> critic -> next. */
function addAttemptEdges(graph: AgentGraphBuilder, { before, after }: StagedSteps, fanOut: FanOut): void {
  graph.addConditionalEdges(
    START,
    (state: AgentState, config: LangGraphRunnableConfig) =>
      routeFromStart(config) === "candidate" ? fanOut(state, config) : "generator",
    [...START_TARGETS, "propose"],
  );

  // A written program enters the first step before execution; without one, the approval gate
  // or the executor. Path maps name every target, so Studio draws every edge.
  const firstStep = before[0]?.name;
  const intoExecution = (state: AgentState, config: LangGraphRunnableConfig) =>
    firstStep ?? routeTowardsExecution(state, config);
  const afterWriteTargets = firstStep ? [firstStep, "finish"] : [...TOWARDS_EXECUTION_TARGETS, "finish"];
  const afterWrite = (state: AgentState, config: LangGraphRunnableConfig) =>
    routeAfterWrite(state) === "finish" ? "finish" : intoExecution(state, config);
  graph.addConditionalEdges("generator", afterWrite, afterWriteTargets);
  graph.addConditionalEdges("fixer", afterWrite, afterWriteTargets);

  chain(
    graph,
    before.map((step) => step.name),
  );
  const lastStep = before.at(-1)?.name;
  if (lastStep) graph.addConditionalEdges(lastStep, routeTowardsExecution, [...TOWARDS_EXECUTION_TARGETS]);
  chain(graph, ["approval", "executor", ...after.map((step) => step.name), "critic"]);
  graph.addConditionalEdges(
    "critic",
    (state: AgentState, config: LangGraphRunnableConfig) => {
      const next = routeNextRound(state, config);
      return next === "candidate" ? fanOut(state, config) : next;
    },
    [...AFTER_ROUND_TARGETS, "propose"],
  );
  graph.addEdge("finish", END);
}

function chain(graph: { addEdge(from: string, to: string): unknown }, names: string[]): void {
  for (let index = 1; index < names.length; index++) graph.addEdge(names[index - 1]!, names[index]!);
}

/**
 * A compiled selfheal agent: `invoke({ task }, { context: { maxAttempts: 3 }, configurable: { thread_id } })`.
 * Its recursion limit fits every valid setting and every extra step, so callers never set one.
 */
export function createAgent(options: AgentOptions = {}, declaration?: IntrospectedDeclaration) {
  const graph = buildAgentGraph(options, declaration);
  // Read from the built graph, so the limit follows whatever steps the extensions added.
  const known: readonly string[] = [...CORE_NODES, ...FAN_OUT_NODES];
  const extraSteps = Object.keys(graph.nodes).filter((name) => !known.includes(name));
  const agent = graph
    .compile({ checkpointer: options.checkpointer, name: "selfheal" })
    .withConfig({ recursionLimit: recursionLimitFor(extraSteps.length) });
  // Every way in (invoke, stream, the LangGraph server behind Studio) validates a new run's input
  // in this one protected method, which LangGraph offers no hook around; a resume (a Command, or
  // null) carries no input.
  const validated = agent as unknown as {
    _validateInput(input: unknown): Promise<unknown>;
    _validateContext(context: unknown): Promise<unknown>;
  };
  const validateInput = validated._validateInput.bind(agent);
  validated._validateInput = async (input) => {
    if (input != null && !isCommand(input)) checkRunInput(input);
    return validateInput(input);
  };
  // A new input on a thread that holds a run would carry that run's status, attempts and best
  // program into the new task (it "passed" without running): refused before the input is saved.
  const streamed = agent as unknown as {
    _streamIterator(
      input: unknown,
      options?: { configurable?: Record<string, unknown>; context?: unknown },
    ): AsyncGenerator<unknown>;
  };
  const streamIterator = streamed._streamIterator.bind(agent);
  const bypassed = stepsCandidatesBypass(options, extraSteps);
  streamed._streamIterator = async function* (input, options) {
    if (bypassed.length > 0) refuseCandidatesPast(bypassed, options?.context);
    if (input != null && !isCommand(input)) await refuseUsedThread(agent, options);
    yield* streamIterator(input, options);
  };
  // Where a context schema is declared (Studio's), LangGraph checks the settings against it first,
  // and its zod error would reach the user as JSON: it becomes the line parseSettings gives.
  const validateContext = validated._validateContext.bind(agent);
  validated._validateContext = async (context) => {
    try {
      return await validateContext(context);
    } catch (error) {
      throw isZodError(error) ? new InvalidSettingsError(formatIssues(error)) : error;
    }
  };
  return agent;
}

/**
 * What a round of candidates would run past: a candidate writes, runs and judges its program in
 * one node, so the extensions' steps and verifiers, and a replaced writer or executor, never see it.
 */
function stepsCandidatesBypass(options: AgentOptions, steps: string[]): string[] {
  const replaced = (["generator", "fixer", "executor"] as const).filter((name) => options.replace?.[name]);
  return [...steps, ...replaced.map((name) => `the replaced ${name}`)];
}

/**
 * A round of candidates with steps it would run past is refused, not run: a candidate could pass
 * without the verifier that would have failed it. One program at a time takes every step.
 */
function refuseCandidatesPast(bypassed: string[], context: unknown): void {
  // Only the number is read here: the nodes parse (and refuse) a bad context as always.
  const candidates =
    typeof context === "object" && context !== null && "candidates" in context ? context.candidates : 1;
  if (typeof candidates !== "number" || candidates <= 1) return;
  throw new InvalidSettingsError(
    `a round of candidates would run past this agent's ${bypassed.join(", ")}: set candidates to 1 to use them`,
  );
}

/**
 * Throws ThreadHasRunError when the thread `options` name holds a run, read from its head
 * checkpoint's values alone (the graph's snapshot is not needed to tell, and this runs before every
 * new input). A run given an earlier checkpoint to start from (`checkpoint_id`) is time travel, not refused.
 */
async function refuseUsedThread(
  agent: { checkpointer?: unknown },
  options: { configurable?: Record<string, unknown> } | undefined,
): Promise<void> {
  const { checkpointer } = agent;
  const configurable = options?.configurable;
  if (
    !isCheckpointer(checkpointer) ||
    typeof configurable?.thread_id !== "string" ||
    configurable.checkpoint_id !== undefined
  )
    return;
  const head = await checkpointer.getTuple({ configurable: { thread_id: configurable.thread_id, checkpoint_ns: "" } });
  const values = (head?.checkpoint.channel_values ?? {}) as Partial<AgentState>;
  const attempts = values.attempt ?? 0;
  if (attempts === 0 && (values.status ?? "running") === "running") return;
  throw new ThreadHasRunError(
    `thread ${configurable.thread_id} already has a run (${values.status}, ${attempts} attempt${attempts === 1 ? "" : "s"}): give a new task a new thread, and continue this run with a resume (no input)`,
  );
}

/** Duck-typed: the dev server brings a checkpointer of its own, perhaps from another copy of the package. */
function isCheckpointer(value: unknown): value is Pick<BaseCheckpointSaver, "getTuple"> {
  return typeof value === "object" && value !== null && "getTuple" in value && typeof value.getTuple === "function";
}

/** Duck-typed: the dev server's copy of zod may not be the one this module imports. */
function isZodError(error: unknown): error is ZodError {
  return error instanceof Error && "issues" in error && Array.isArray(error.issues);
}

export type Agent = ReturnType<typeof createAgent>;
