import type pg from "pg";

/**
 * Runs `statements` (CREATE ... IF NOT EXISTS) under a lock per schema: workers that start
 * together would otherwise race on the catalog, and IF NOT EXISTS does not protect against that.
 */
export async function createTablesOnce(pool: pg.Pool, schema: string, statements: string[]): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`selfheal:queue-setup:${schema}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    for (const statement of statements) await client.query(statement);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
