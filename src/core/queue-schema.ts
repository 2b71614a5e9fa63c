import { InvalidSettingsError } from "./errors.js";

// In core, not in the queue: the CLI checks a --queue-schema through `selfheal/settings` before
// anything loads pg-boss, and the queue checks it again where it enters that package.

/** The PostgreSQL schema pg-boss (and our heartbeat and rate tables) live in, unless told otherwise. */
export const DEFAULT_QUEUE_SCHEMA = "selfheal_queue";

/**
 * A schema name that `checkSchemaName` accepted. The queue's SQL builders take only this type, so
 * the compiler shows that every name they put into SQL went through the check.
 */
export type QueueSchemaName = string & { readonly checkedBy: "checkSchemaName" };

/**
 * The schema name goes into SQL as an identifier, here and inside pg-boss, which does not quote
 * it: only a name that needs no quoting is accepted, checked where it enters the queue package.
 */
export function checkSchemaName(schema: string): QueueSchemaName {
  if (typeof schema !== "string" || !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new InvalidSettingsError(
      `the queue schema must be 1 to 63 lower-case letters, digits and underscores, starting with a letter or underscore (got ${JSON.stringify(schema)})`,
    );
  }
  return schema as QueueSchemaName;
}

/** How the queue delivers a job; in core beside the schema name, so the CLI declares its flags without pg-boss. */
export interface DeliveryPolicy {
  /** Deliveries after the first before a job is dead-lettered. A killed worker's delivery counts as one. */
  retryLimit: number;
  /** Seconds before the first retry; doubled (with jitter) for each further one. */
  retryDelaySeconds: number;
  /**
   * How long one delivery may stay active. A worker killed mid-run holds its job this long before
   * another takes it, so it is also the recovery time; a run still going then is stopped between
   * steps and continues from its checkpoint on the next delivery.
   */
  expireInSeconds: number;
}

export const DEFAULT_DELIVERY: DeliveryPolicy = { retryLimit: 5, retryDelaySeconds: 10, expireInSeconds: 30 * 60 };
