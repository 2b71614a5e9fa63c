import type { QueueLocation, QueueOpenOptions, TaskQueue } from "../queue/index.js";
// The name rules from the light entry: pg-boss loads when a command opens the queue, not for `runs` on SQLite.
import { checkSchemaName, DEFAULT_QUEUE_SCHEMA } from "../settings.js";
import { resolveStoreLocation } from "../store/index.js";
import type { QueueFlags } from "./queue-options.js";
import { UsageError } from "./session.js";

/** The queue lives in the PostgreSQL database of the run store, so workers share checkpoints and jobs alike. */
export function resolveQueueLocation(flags: QueueFlags, env: NodeJS.ProcessEnv = process.env): QueueLocation {
  const store = resolveStoreLocation(flags, env);
  if (store.kind !== "postgres") {
    throw new UsageError("the queue needs the PostgreSQL store: give --postgres URL or set SELFHEAL_POSTGRES_URL");
  }
  const schema = flags.queueSchema ?? env.SELFHEAL_QUEUE_SCHEMA ?? DEFAULT_QUEUE_SCHEMA;
  try {
    return { url: store.url, schema: checkSchemaName(schema) };
  } catch (error) {
    throw new UsageError(`--queue-schema: ${(error as Error).message}`);
  }
}

/** Opens the queue, runs `use`, and always closes it. */
export async function withQueue<T>(
  location: QueueLocation,
  options: QueueOpenOptions,
  use: (queue: TaskQueue) => Promise<T>,
): Promise<T> {
  const { TaskQueue } = await import("../queue/index.js");
  const queue = await TaskQueue.open(location, options);
  try {
    return await use(queue);
  } finally {
    await queue.close();
  }
}
