// `selfheal`: what a program that runs the agent needs, and what it needs to extend it. Heavy parts
// have entries of their own, so importing this one loads no database driver and builds no graph:
// the run store is `selfheal/store`, the queue `selfheal/queue`, the benchmark `selfheal/bench`,
// the MCP server `selfheal/mcp`, the sandbox conformance suite `selfheal/testing`. The CLI and the
// other front ends reach the rest through an internal entry (src/internal.ts).

// The error classes and the settings, as `selfheal/settings` has them too.
export * from "./common-exports.js";
export type { ArtifactFile } from "./core/data-files.js";
export { StoreUnavailableError } from "./core/errors.js";
export { type AfterCriticDecision, decideAfterCritic, type StopDecision } from "./core/policy.js";
export { checkRunInput } from "./core/run-input.js";
export type { AgentState, AgentUpdate, Execution, KeptArtifacts, Objection, RunInput } from "./core/state.js";
export { blockExecution, failAttempt } from "./core/state.js";
// The agent: `createAgent().invoke({ task }, { context: settings, configurable: { thread_id } })`.
export {
  type Agent,
  type AgentOptions,
  buildAgentGraph,
  createAgent,
} from "./graph/build.js";
// Extending it: extra steps before or after execution, verifiers, replaced nodes (docs/extending.md).
export {
  type AgentExtensions,
  CORE_NODES,
  type CoreNodeName,
  type ExtraStep,
  type Finding,
  type NodeReplacement,
  type Verifier,
  type VerifierContext,
} from "./graph/extensions.js";
// A run's state, for a program that stops and continues runs (the CLI's `resume`).
export { describeStatus, planResume } from "./graph/resume.js";
export { routeAfterCritic, routeAfterWrite } from "./graph/routes.js";
// Serving your own graph to LangGraph Studio, with selfheal's input and settings forms.
export { studioDeclaration } from "./graph/studio-declaration.js";
export type { ApprovalDecision, ApprovalRequest } from "./nodes/approval.js";
// What `stream(..., { streamMode: "custom" })` yields: each line a program prints, live.
export type { OutputEvent } from "./nodes/executor.js";
export type { AgentNode, AgentRuntime, NodeDeps } from "./nodes/types.js";
// Sandboxes: one of selfheal's (`createSandbox`), or your own behind the same contract, with the
// helpers a backend needs (docs/extending.md; `selfheal/testing` proves the contract).
export {
  CODE_FILE_NAME,
  checkSandbox,
  collectArtifacts,
  createSandbox,
  DEFAULT_LIMITS,
  parseError,
  RUN_CANCELLED_NOTE,
  resolveLimits,
  SharedSandboxes,
  safeRelativePath,
} from "./sandbox/index.js";
export type * from "./sandbox/types.js";
// Models: OpenAI-compatible from the environment, a scripted one for tests, record and replay.
export { createChatModel } from "./tools/models.js";
export {
  ModelCallMissError,
  type ModelCallsMode,
  RecordedChatModel,
} from "./tools/recorded-model.js";
export { ScriptedChatModel } from "./tools/scripted-model.js";
