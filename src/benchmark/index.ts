// `selfheal/bench`: the HumanEval-format benchmark and the dataset checker, apart from the agent's
// own entry since an application that runs the agent never needs them.

export { type BenchmarkInput, streamingRunner, type TaskRunner } from "./capture.js";
export {
  type BenchmarkTask,
  BenchmarkTaskSchema,
  buildCheckProgram,
  buildHiddenTests,
  DatasetError,
  type DatasetLocation,
  DEFAULT_DATASET_DIR,
  filterTasks,
  type LoadDatasetOptions,
  loadDataset,
  NAMED_DATASETS,
  type NamedDataset,
  parseDatasetText,
  parseTaskIds,
  resolveDatasetPath,
  type TaskFilter,
} from "./dataset.js";
export { type HtmlReportOptions, renderHtmlReport, taskAnchor } from "./html-report.js";
export { passAtK } from "./metrics.js";
export type {
  AttemptRecord,
  BenchmarkReport,
  SampleRecord,
  SamplingSummary,
  TaskOutcome,
  TaskStatus,
} from "./records.js";
export { type RunBenchmarkOptions, runBenchmark } from "./run.js";
export { SandboxPool } from "./sandbox-pool.js";
export {
  SIMULATED_MODEL_LABEL,
  SIMULATED_MODEL_NAME,
  SimulatedBenchmarkModel,
  type SimulatedScript,
} from "./simulated-model.js";
export { summarizeBenchmark } from "./summary.js";
export { formatBenchmarkTable, reportBanner } from "./table.js";
export { buildBenchmarkTask, FEEDBACK_LABELS, FEEDBACK_MODES, type FeedbackMode, testsForTask } from "./task-input.js";
export {
  BENCH_SANDBOX_LIMITS,
  formatVerifyReport,
  HIDDEN_JUDGE_TIMEOUT_MS,
  judgeCompletion,
  judgeProgram,
  type MutantVerification,
  type TaskVerification,
  type VerifyOptions,
  type VerifyReport,
  verifyDataset,
} from "./verify.js";
export { buildVisibleTests, extractVisibleExamples, type VisibleExample } from "./visible-tests.js";
