// `selfheal/queue`: runs spread over many workers by a pg-boss queue in the PostgreSQL the run
// store already uses. Its own entry because it loads pg-boss, which `import "selfheal"` must not pay for.
export { ModelCallGate, type ModelCallRate, SharedTokenBucket } from "./rate-limit.js";
export { checkSchemaName } from "./setup.js";
export {
  DEAD_LETTER_QUEUE,
  DEFAULT_DELIVERY,
  DEFAULT_QUEUE_SCHEMA,
  type Delivery,
  type DeliveryPolicy,
  type QueuedRun,
  type QueueLocation,
  type QueueState,
  RUN_QUEUE,
  type RunJobData,
  readQueuedRuns,
  TaskQueue,
  type WorkOptions,
  workerName,
} from "./task-queue.js";
