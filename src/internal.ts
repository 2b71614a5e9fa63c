// Everything the front ends (CLI, MCP, queue, benchmark, report) build on, in one internal entry:
// the root (`selfheal`, src/index.ts) and `selfheal/settings` whole, and the parts behind them.
// Users import the root, which keeps to what `createAgent` needs.

export { chooseCandidate, planRound } from "./core/candidates.js";
export { ARTIFACTS_FOLDER, type ArtifactCollection, type InputSource, mediaTypeOf } from "./core/data-files.js";
export type { BestAttempt, ErrorObservation, ErrorRecord, HistoryEntry, ModelCallUsage, Usage } from "./core/ledger.js";
export { addUsage, emptyUsage, keepHigherScore, mergeErrors } from "./core/ledger.js";
export { repeatStreak } from "./core/policy.js";
export {
  LanguageSchema,
  ParsedErrorSchema,
  RunResultSchema,
  SandboxKindSchema,
  TEST_ISOLATIONS,
  type TestIsolation,
  TestIsolationSchema,
} from "./core/run-result.js";
export { SETTING_TABLE, type SettingSpec, type SettingTable } from "./core/setting-table.js";
export {
  type ContextChannels,
  MAX_SANDBOX_CONCURRENCY,
  type SettingsShape,
  settingsSchemaOf,
} from "./core/settings.js";
export type {
  CandidateChoice,
  CandidateOutcome,
  CandidateSpec,
  Critique,
  Decision,
  ExitCall,
  Note,
  OutputLine,
  RunStatusValue,
} from "./core/state.js";
export {
  DecisionSchema,
  LIVE_LINE_CHARS,
  LIVE_TAIL_LINES,
  objectionsFor,
  RUN_STATUSES,
  RunInputSchema,
  State,
} from "./core/state.js";
export {
  describeTestIsolation,
  type Failure,
  type Judgement,
  judgeAttempt,
  judgeExecution,
  PACKAGE_FINDINGS,
  type RunEvidence,
  scoreAttempt,
  TESTS_NOT_FINISHED,
  type VerdictEvidence,
  type VerdictFinding,
} from "./core/verdict.js";
export { createNodeDeps, type IntrospectedDeclaration, recursionLimitFor, withSettings } from "./graph/build.js";
export { verifierNode } from "./graph/extensions.js";
export { checkNewRun, type NewRun } from "./graph/new-run.js";
export { stepsLeft } from "./graph/resume.js";
export {
  AFTER_CRITIC_TARGETS,
  AFTER_WRITE_TARGETS,
  routeTowardsExecution,
  TOWARDS_EXECUTION_TARGETS,
} from "./graph/routes.js";
export {
  driveRun,
  type RunEvent,
  type RunEventsOptions,
  type RunStart,
  type RunStop,
  runEvents,
} from "./graph/run-events.js";
export { registeredState } from "./graph/studio-declaration.js";
export * from "./index.js";
export { ApprovalDecisionSchema, approvalNode } from "./nodes/approval.js";
export { fixerRoleFor } from "./nodes/attempt.js";
export { createCriticNode } from "./nodes/critic.js";
export { createExecutorNode } from "./nodes/executor.js";
export { artifactFoldersToRemove, finishNode } from "./nodes/finish.js";
export { createFixerNode } from "./nodes/fixer.js";
export { createGeneratorNode } from "./nodes/generator.js";
/** A judged Python run's main.py line and the judge file's separator: how the batch tells a judged program. */
export { PYTHON_JUDGE_LINE, PYTHON_JUDGED_PROGRAM_FILE } from "./sandbox/host/bootstrap.js";
export {
  DATA_MODULES,
  defaultPython,
  findPythons,
  type PythonFound,
  probePython,
} from "./sandbox/host/interpreters.js";
export { pythonRunMainSource } from "./sandbox/index.js";
export * from "./settings.js";
export { type AssembledProgram, assembleProgram, findExitCalls, settleCompletion } from "./tools/assemble.js";
export { extractCode } from "./tools/extract-code.js";
export { fingerprintError, normalizeErrorMessage } from "./tools/fingerprint.js";
export { type LoadedInput, type LoadedInputs, loadInputs } from "./tools/inputs.js";
export { type PreparedProgram, type PrepareOptions, prepareProgram, type TaskHelpers } from "./tools/judge/prepare.js";
/** The Python judge's text and file name, for a harness that compiles it once for many runs (the benchmark's batch). */
export { PYTHON_JUDGE, PYTHON_JUDGE_FILE } from "./tools/judge/python-judge.js";
export { describeModelEndpoint } from "./tools/model-errors.js";
export {
  type AgentModels,
  checkModelConfig,
  createModelResolver,
  hasModelConfig,
  modelRetriesFromEnv,
} from "./tools/models.js";
export {
  ModelCallLog,
  type RecordedChatModelFields,
  type RecordedReply,
  type RecordedRequest,
  requestKey,
} from "./tools/recorded-model.js";
export { describeRuntimeValues } from "./tools/runtime-values/index.js";
export { countTokens, messageText } from "./tools/tokens.js";
