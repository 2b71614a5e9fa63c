import { hostname } from "node:os";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import pg from "pg";
import { StoreConnectionError } from "../core/errors.js";
import { postgresLeases } from "./lease.js";
import { describeLocation, type StoreLocation } from "./location.js";
import { isPostgresOutage, POSTGRES_CONNECTION_OPTIONS, StoreWaits } from "./outage.js";
import { PatientCheckpointer } from "./patient-checkpointer.js";
import { quietConnectionErrors } from "./pg-connections.js";
import { listedRecord, type RunRow, type RunStore, recordFromRow, rowValues } from "./run-store.js";

/** Any fixed number: it only keeps two workers from running the schema setup at the same time. */
const SETUP_LOCK_KEY = 4_242_001;

export async function openPostgresStore(location: Extract<StoreLocation, { kind: "postgres" }>): Promise<RunStore> {
  const pool = new pg.Pool({
    connectionString: location.url,
    max: 4,
    application_name: `selfheal ${process.pid}@${hostname()}`,
    ...POSTGRES_CONNECTION_OPTIONS,
  });
  quietConnectionErrors(pool);
  const saver = new PostgresSaver(pool);
  const leases = postgresLeases(pool);
  const waits = new StoreWaits();
  const checkpointer = new PatientCheckpointer(saver, {
    isOutage: isPostgresOutage,
    where: describeLocation(location),
    waits,
    beforeWrite: leases.confirm,
  });
  const setupClient = await pool.connect().catch((error: Error) => {
    void pool.end();
    throw new StoreConnectionError(`cannot connect to PostgreSQL at ${describeLocation(location)}: ${error.message}`, {
      cause: error,
    });
  });
  try {
    await setupClient.query("SELECT pg_advisory_lock($1)", [SETUP_LOCK_KEY]);
    await saver.setup();
    await setupClient.query(`
      CREATE TABLE IF NOT EXISTS selfheal_runs (
        thread_id TEXT PRIMARY KEY,
        task TEXT NOT NULL,
        settings JSONB NOT NULL,
        created_at TEXT NOT NULL,
        forked_from_thread TEXT,
        forked_from_checkpoint TEXT
      )`);
  } catch (error) {
    setupClient.release();
    await pool.end();
    throw error;
  }
  await setupClient.query("SELECT pg_advisory_unlock($1)", [SETUP_LOCK_KEY]);
  setupClient.release();

  return {
    location,
    checkpointer,
    async saveRun(record) {
      await pool.query(
        `INSERT INTO selfheal_runs (thread_id, task, settings, created_at, forked_from_thread, forked_from_checkpoint)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (thread_id) DO UPDATE SET task = $2, settings = $3, forked_from_thread = $5, forked_from_checkpoint = $6`,
        rowValues(record),
      );
    },
    async getRun(threadId) {
      const { rows } = await pool.query<RunRow>("SELECT * FROM selfheal_runs WHERE thread_id = $1", [threadId]);
      return rows[0] ? recordFromRow(rows[0]) : undefined;
    },
    async listRuns() {
      const { rows } = await pool.query<RunRow>("SELECT * FROM selfheal_runs ORDER BY created_at DESC");
      return rows.map(listedRecord);
    },
    lease: leases.lease,
    onWait: (listener) => waits.on(listener),
    patiently: checkpointer.patiently,
    async close() {
      await pool.end();
    },
  };
}
