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
  type BenchmarkTask,
  type DatasetLocation,
  type LoadDatasetOptions,
  type TaskFilter,
} from "./dataset.js";
export {
  runBenchmark,
  formatBenchmarkTable,
  summarizeBenchmark,
  buildBenchmarkTask,
  type BenchmarkReport,
  type RunBenchmarkOptions,
  type TaskOutcome,
  type TaskStatus,
} from "./run.js";
export {
  verifyDataset,
  formatVerifyReport,
  type VerifyOptions,
  type VerifyReport,
  type TaskVerification,
  type MutantVerification,
} from "./verify.js";
export { SimulatedBenchmarkModel, SIMULATED_MODEL_NAME, SIMULATED_MODEL_LABEL, type SimulatedScript } from "./simulated-model.js";
