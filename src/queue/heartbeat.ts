import type pg from "pg";
import type { QueueSchemaName } from "../core/queue-schema.js";

/**
 * pg-boss 10 has no heartbeat: a job is `active` from fetch until it ends or expires, whether its
 * worker is alive or not. So each worker writes one row per running job here, and `runs` can tell
 * a job that is moving from one whose worker went quiet.
 */
export const HEARTBEAT_TABLE_SQL = (schema: QueueSchemaName) => `
  CREATE TABLE IF NOT EXISTS ${schema}.selfheal_heartbeats (
    job_id UUID PRIMARY KEY,
    thread_id TEXT NOT NULL,
    worker TEXT NOT NULL,
    step TEXT,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    heartbeat_at TIMESTAMPTZ NOT NULL DEFAULT now()
  )`;

export interface Heartbeats {
  /** Aborts when a beat finds the job cancelled. */
  cancelled: AbortSignal;
  setStep(step: string): void;
  stop(): Promise<void>;
}

/**
 * Writes the job's row now and every `everySeconds`, and checks on each beat whether the job was
 * cancelled. A failed beat (the database hiccuped) is skipped: the run itself decides the job's fate.
 */
export function startHeartbeat(
  pool: pg.Pool,
  schema: QueueSchemaName,
  job: {
    jobId: string;
    threadId: string;
    worker: string;
    everySeconds: number;
    /** The pg-boss queue the job is in, where a beat reads whether it was cancelled. */
    queue: string;
  },
): Heartbeats {
  const controller = new AbortController();
  let step: string | undefined;
  const beat = async (checkCancelled = true) => {
    try {
      // One round trip: the row written and the job's state read (pg-boss keeps it in its job table).
      const { rows } = await pool.query<{ state: string }>(
        `WITH beat AS (
           INSERT INTO ${schema}.selfheal_heartbeats (job_id, thread_id, worker, step) VALUES ($1, $2, $3, $4)
           ON CONFLICT (job_id) DO UPDATE SET worker = $3, step = $4, heartbeat_at = now(),
             started_at = CASE WHEN ${schema}.selfheal_heartbeats.worker = $3 THEN ${schema}.selfheal_heartbeats.started_at ELSE now() END
         )
         SELECT state::text AS state FROM ${schema}.job WHERE name = $5 AND id = $1`,
        [job.jobId, job.threadId, job.worker, step ?? null, job.queue],
      );
      if (checkCancelled && rows[0]?.state === "cancelled")
        controller.abort(new Error(`job ${job.jobId} was cancelled`));
    } catch {
      // Next beat.
    }
  };
  const first = beat();
  const timer = setInterval(() => void beat(), job.everySeconds * 1000);
  return {
    cancelled: controller.signal,
    setStep(next) {
      step = next;
    },
    async stop() {
      clearInterval(timer);
      await first;
      // The last beat records the step the job ended on; whether the job was cancelled no longer matters.
      await beat(false);
    },
  };
}
