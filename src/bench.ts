// `selfheal/bench`: the HumanEval-format benchmark and the dataset checker, apart from the agent's
// own entry since an application that runs the agent never needs them.
export {
  loadDataset,
  parseDatasetText,
  filterTasks,
  parseTaskIds,
  resolveDatasetPath,
  buildCheckProgram,
  buildHiddenTests,
  BenchmarkTaskSchema,
  DatasetError,
  DEFAULT_DATASET_DIR,
  NAMED_DATASETS,
  type BenchmarkTask,
  type NamedDataset,
  type DatasetLocation,
  type LoadDatasetOptions,
  type TaskFilter,
} from "./benchmark/dataset.js";
export {
  runBenchmark,
  formatBenchmarkTable,
  reportBanner,
  summarizeBenchmark,
  buildBenchmarkTask,
  testsForTask,
  FEEDBACK_MODES,
  FEEDBACK_LABELS,
  type FeedbackMode,
  type AttemptRecord,
  type SampleRecord,
  type SamplingSummary,
  type BenchmarkReport,
  type RunBenchmarkOptions,
  type TaskOutcome,
  type TaskStatus,
} from "./benchmark/run.js";
export {
  verifyDataset,
  judgeProgram,
  judgeCompletion,
  BENCH_SANDBOX_LIMITS,
  HIDDEN_JUDGE_TIMEOUT_MS,
  formatVerifyReport,
  type VerifyOptions,
  type VerifyReport,
  type TaskVerification,
  type MutantVerification,
} from "./benchmark/verify.js";
export { SimulatedBenchmarkModel, SIMULATED_MODEL_NAME, SIMULATED_MODEL_LABEL, type SimulatedScript } from "./benchmark/simulated-model.js";
export { passAtK } from "./benchmark/metrics.js";
export { extractVisibleExamples, buildVisibleTests, type VisibleExample } from "./benchmark/visible-tests.js";
export { renderHtmlReport } from "./benchmark/html-report.js";
