export { createAgent, buildAgentGraph, createNodeDeps, withSettings, recursionLimitFor, graph, type Agent, type AgentOptions } from "./graph/index.js";
export {
  CORE_NODES,
  verifierNode,
  type AgentExtensions,
  type CoreNodeName,
  type ExtraStep,
  type Finding,
  type NodeReplacement,
  type Verifier,
  type VerifierContext,
} from "./graph/extensions.js";
export {
  State,
  RunInputSchema,
  mergeErrors,
  addUsage,
  emptyUsage,
  objectionsFor,
  blockExecution,
  failAttempt,
  RUN_STATUSES,
  DecisionSchema,
} from "./graph/state.js";
export type {
  AgentState,
  AgentUpdate,
  BestAttempt,
  Critique,
  ErrorRecord,
  ErrorObservation,
  Execution,
  HistoryEntry,
  Objection,
  Note,
  RunInput,
  Usage,
  ModelCallUsage,
  RunStatusValue,
  Decision,
} from "./graph/state.js";
export {
  SettingsSchema,
  ContextSchema,
  MAX_ATTEMPTS_LIMIT,
  parseSettings,
  type ContextChannels,
  type Settings,
  type SettingsInput,
} from "./graph/context.js";
export {
  decideAfterCritic,
  routeAfterCritic,
  routeAfterWrite,
  routeTowardsExecution,
  repeatStreak,
  AFTER_CRITIC_TARGETS,
  AFTER_WRITE_TARGETS,
  TOWARDS_EXECUTION_TARGETS,
  type AfterCriticDecision,
  type StopDecision,
} from "./graph/routes.js";
export { createGeneratorNode } from "./nodes/generator.js";
export { createExecutorNode, type OutputEvent } from "./nodes/executor.js";
export { createCriticNode, judgeRun, scoreAttempt } from "./nodes/critic.js";
export { createFixerNode, fixerRoleFor } from "./nodes/fixer.js";
export { approvalNode, ApprovalDecisionSchema, type ApprovalDecision, type ApprovalRequest } from "./nodes/approval.js";
export type { AgentNode, AgentRuntime, NodeDeps } from "./nodes/types.js";
export { extractCode } from "./tools/extract-code.js";
export { fingerprintError, normalizeErrorMessage } from "./tools/fingerprint.js";
export { createChatModel, createModelResolver, hasModelConfig, type AgentModels } from "./tools/models.js";
export { describeModelEndpoint } from "./tools/model-errors.js";
export { ScriptedChatModel } from "./tools/scripted-model.js";
export { checkSandbox, createSandbox } from "./tools/sandbox/index.js";
export type * from "./tools/sandbox/types.js";
// Heavy parts have their own entries so importing the agent loads neither database driver:
// the run store is `selfheal/store` (src/store.ts), the benchmark `selfheal/bench` (src/bench.ts).
export {
  SelfhealError,
  InvalidSettingsError,
  MissingModelConfigError,
  SandboxUnavailableError,
  ThreadBusyError,
  StoreConnectionError,
  UsageError,
  type SelfhealErrorCode,
} from "./errors.js";
