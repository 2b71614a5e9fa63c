export { createAgent, buildAgentGraph, createNodeDeps, withSettings, recursionLimitFor, type Agent, type AgentOptions } from "./graph/build.js";
export { graph } from "./graph/studio.js";
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
} from "./core/state.js";
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
} from "./core/state.js";
export {
  SettingsSchema,
  ContextSchema,
  MAX_ATTEMPTS_LIMIT,
  parseSettings,
  formatIssues,
  type ContextChannels,
  type Settings,
  type SettingsInput,
} from "./core/settings.js";
export { decideAfterCritic, repeatStreak, type AfterCriticDecision, type StopDecision } from "./core/policy.js";
export {
  routeAfterCritic,
  routeAfterWrite,
  routeTowardsExecution,
  AFTER_CRITIC_TARGETS,
  AFTER_WRITE_TARGETS,
  TOWARDS_EXECUTION_TARGETS,
} from "./graph/routes.js";
export { createGeneratorNode } from "./nodes/generator.js";
export { createExecutorNode, type OutputEvent } from "./nodes/executor.js";
export { createCriticNode, judgeRun, scoreAttempt } from "./nodes/critic.js";
export { createFixerNode, fixerRoleFor } from "./nodes/fixer.js";
export { approvalNode, ApprovalDecisionSchema, type ApprovalDecision, type ApprovalRequest } from "./nodes/approval.js";
export type { AgentNode, AgentRuntime, NodeDeps } from "./nodes/types.js";
export { extractCode } from "./tools/extract-code.js";
export { fingerprintError, normalizeErrorMessage } from "./tools/fingerprint.js";
export { createChatModel, createModelResolver, hasModelConfig, modelRetriesFromEnv, type AgentModels } from "./tools/models.js";
export { countTokens, messageText } from "./tools/tokens.js";
export { describeModelEndpoint } from "./tools/model-errors.js";
export { ScriptedChatModel } from "./tools/scripted-model.js";
export { checkSandbox, createSandbox } from "./sandbox/index.js";
export type * from "./sandbox/types.js";
export { LANGUAGES, SANDBOX_KINDS, LanguageSchema, SandboxKindSchema, ParsedErrorSchema, RunResultSchema } from "./core/run-result.js";
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
} from "./core/errors.js";
