// `selfheal/queue`: runs spread over many workers by a pg-boss queue in the PostgreSQL the run
// store already uses, and the worker that runs them (`startWorker`), usable without the CLI. Its
// own entry because it loads pg-boss, which `import "selfheal"` must not pay for.
export {
  checkSchemaName,
  DEFAULT_DELIVERY,
  DEFAULT_QUEUE_SCHEMA,
  type DeliveryPolicy,
  type QueueSchemaName,
} from "../core/queue-schema.js";
export { type QueueOutageEvent, surviveQueueOutages } from "./outage-watch.js";
export { ModelCallGate, type ModelCallRate, SharedTokenBucket } from "./rate-limit.js";
export { EnvironmentFailure, type QueuedRunDeps, type QueuedRunOutcome, runQueuedThread } from "./run-thread.js";
export {
  DEAD_LETTER_QUEUE,
  type Delivery,
  type QueuedRun,
  type QueueLocation,
  type QueueOpenOptions,
  type QueueState,
  RUN_QUEUE,
  type RunJobData,
  readQueuedRuns,
  TaskQueue,
  type WorkOptions,
  workerName,
} from "./task-queue.js";
export { type RunningWorker, startWorker, type WorkerEvent, type WorkerOptions } from "./worker.js";
