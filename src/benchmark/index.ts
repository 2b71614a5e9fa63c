// `selfheal/bench`: the HumanEval-format benchmark and the dataset checker, apart from the agent's
// own entry since an application that runs the agent never needs them.
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
  parseDatasetText,
  parseTaskIds,
  resolveDatasetPath,
  type TaskFilter,
} from "./dataset.js";
export {
  type BenchmarkReport,
  buildBenchmarkTask,
  formatBenchmarkTable,
  type RunBenchmarkOptions,
  runBenchmark,
  summarizeBenchmark,
  type TaskOutcome,
  type TaskStatus,
} from "./run.js";
export {
  SIMULATED_MODEL_LABEL,
  SIMULATED_MODEL_NAME,
  SimulatedBenchmarkModel,
  type SimulatedScript,
} from "./simulated-model.js";
export {
  formatVerifyReport,
  type MutantVerification,
  type TaskVerification,
  type VerifyOptions,
  type VerifyReport,
  verifyDataset,
} from "./verify.js";
