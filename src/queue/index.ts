// `selfheal/queue`: runs spread over many workers by a pg-boss queue in the PostgreSQL the run
// store already uses. Its own entry because it loads pg-boss, which `import "selfheal"` must not pay for.

export { checkSchemaName, DEFAULT_QUEUE_SCHEMA } from "../core/queue-schema.js";
export { ModelCallGate, type ModelCallRate, SharedTokenBucket } from "./rate-limit.js";
export {
  DEAD_LETTER_QUEUE,
  DEFAULT_DELIVERY,
  type Delivery,
  type DeliveryPolicy,
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
