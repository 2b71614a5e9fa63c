import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import pg from "pg";
import { checkSchemaName, type QueueSchemaName } from "../core/queue-schema.js";
import { DEFAULT_STORE_WAIT_SECONDS } from "../core/settings.js";
import { isPostgresOutage, POSTGRES_CONNECTION_OPTIONS, waitForStore } from "../store/outage.js";
import { quietConnectionErrors } from "../store/pg-connections.js";
import { createTablesOnce } from "./setup.js";

/** A rate shared by every worker on one database: `perMinute` on average, up to `burst` at once. */
export interface ModelCallRate {
  perMinute: number;
  burst: number;
}

const BUCKET_TABLE_SQL = (schema: QueueSchemaName) => `
  CREATE TABLE IF NOT EXISTS ${schema}.selfheal_rate_buckets (
    name TEXT PRIMARY KEY,
    tokens DOUBLE PRECISION NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
  )`;

/**
 * A token bucket in one PostgreSQL row. pg-boss's throttling (singletonSeconds) limits how often
 * jobs are *sent*, not how often a running job may call its model, so the bucket is our own: one
 * UPDATE refills it for the time passed and takes a token if there is one, under the row lock,
 * so any number of workers on any number of machines share one rate.
 */
export class SharedTokenBucket {
  private constructor(
    private readonly pool: pg.Pool,
    private readonly schema: QueueSchemaName,
    private readonly name: string,
    readonly rate: ModelCallRate,
  ) {}

  static async open(url: string, schemaName: string, name: string, rate: ModelCallRate): Promise<SharedTokenBucket> {
    const schema = checkSchemaName(schemaName);
    const pool = new pg.Pool({ connectionString: url, max: 2, ...POSTGRES_CONNECTION_OPTIONS });
    quietConnectionErrors(pool);
    await createTablesOnce(pool, schema, [BUCKET_TABLE_SQL(schema)]);
    await pool.query(
      `INSERT INTO ${schema}.selfheal_rate_buckets (name, tokens, updated_at) VALUES ($1, $2, clock_timestamp())
       ON CONFLICT (name) DO NOTHING`,
      [name, rate.burst],
    );
    return new SharedTokenBucket(pool, schema, name, rate);
  }

  /** Takes one token, or says how long until one is there. */
  async tryTake(): Promise<{ granted: boolean; waitMs: number }> {
    const perSecond = this.rate.perMinute / 60;
    const { rows } = await this.pool.query<{ granted: boolean; wait_seconds: number }>(
      `WITH now AS (SELECT clock_timestamp() AS at),
       current AS (
         SELECT LEAST($2::float8, tokens + EXTRACT(EPOCH FROM (now.at - updated_at)) * $3::float8) AS refilled
         FROM ${this.schema}.selfheal_rate_buckets, now WHERE name = $1 FOR UPDATE
       )
       UPDATE ${this.schema}.selfheal_rate_buckets b
       SET tokens = CASE WHEN c.refilled >= 1 THEN c.refilled - 1 ELSE c.refilled END, updated_at = now.at
       FROM current c, now WHERE b.name = $1
       RETURNING c.refilled >= 1 AS granted, GREATEST(0, (1 - c.refilled) / $3::float8) AS wait_seconds`,
      [this.name, this.rate.burst, perSecond],
    );
    const row = rows[0];
    if (!row) throw new Error(`rate bucket ${this.name} is missing from ${this.schema}`);
    return { granted: row.granted, waitMs: Math.ceil(row.wait_seconds * 1000) };
  }

  /**
   * Waits for a token; the wait is what the database says, so waiting workers do not poll hot.
   * While the database is away it waits for it as a run's checkpoints do (see `storeWaitSeconds`).
   */
  async take(signal?: AbortSignal): Promise<void> {
    for (;;) {
      signal?.throwIfAborted();
      const { granted, waitMs } = await waitForStore(() => this.tryTake(), {
        operation: "taking a model call token",
        boundMs: DEFAULT_STORE_WAIT_SECONDS * 1000,
        isOutage: isPostgresOutage,
        where: `the rate bucket ${this.name}`,
        report: () => undefined,
      });
      if (granted) return;
      await new Promise((resolve) => setTimeout(resolve, Math.max(5, waitMs)));
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/**
 * Holds every model call of a run until the shared bucket gives it a token. A LangChain callback
 * rather than a wrapped model: the worker's models are built by name inside the graph (one per
 * role and setting), and a callback passed to the run reaches every one of them, the critic's
 * structured calls included, without changing a node. `awaitHandlers` makes LangChain wait for
 * it before the request goes out; `raiseError` lets a database failure fail the call (a
 * model_error, which the worker retries) instead of letting it through unlimited.
 */
export class ModelCallGate extends BaseCallbackHandler {
  name = "selfheal_model_call_gate";
  override awaitHandlers = true;
  override raiseError = true;

  constructor(private readonly bucket: Pick<SharedTokenBucket, "take">) {
    super();
  }

  override async handleChatModelStart(): Promise<void> {
    await this.bucket.take();
  }

  override async handleLLMStart(): Promise<void> {
    await this.bucket.take();
  }
}
