import type pg from "pg";
import type { QueueSchemaName } from "../core/queue-schema.js";

/**
 * Runs `use` while holding a session lock per schema. Processes that start together on a fresh
 * schema would otherwise race: CREATE ... IF NOT EXISTS does not guard the catalog against two
 * sessions at once, and two pg-boss instances creating the same queue partition deadlock.
 */
export async function withSchemaSetupLock<T>(
  pool: pg.Pool,
  schema: QueueSchemaName,
  use: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  const key = `selfheal:queue-setup:${schema}`;
  try {
    await client.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [key]);
    try {
      return await use(client);
    } finally {
      await client.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [key]);
    }
  } finally {
    client.release();
  }
}

/** Creates the schema and runs `statements` (CREATE ... IF NOT EXISTS) under the setup lock. */
export function createTablesOnce(pool: pg.Pool, schema: QueueSchemaName, statements: string[]): Promise<void> {
  return withSchemaSetupLock(pool, schema, async (client) => {
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    for (const statement of statements) await client.query(statement);
  });
}
