import { InvalidSettingsError } from "./errors.js";

/** The PostgreSQL schema pg-boss (and our heartbeat and rate tables) live in, unless told otherwise. */
export const DEFAULT_QUEUE_SCHEMA = "selfheal_queue";

/**
 * The schema name goes into SQL as an identifier, here and inside pg-boss, which does not quote
 * it: only a name that needs no quoting is accepted, checked where it enters this package.
 */
export function checkSchemaName(schema: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new InvalidSettingsError(
      `the queue schema must be 1 to 63 lower-case letters, digits and underscores, starting with a letter or underscore (got ${JSON.stringify(schema)})`,
    );
  }
  return schema;
}
