import { hostname } from "node:os";
import pg from "pg";
import PgBoss from "pg-boss";
import { StoreConnectionError } from "../core/errors.js";
import { checkSchemaName, type DeliveryPolicy, type QueueSchemaName } from "../core/queue-schema.js";
import { DEFAULT_STORE_WAIT_SECONDS } from "../core/settings.js";
import type { RunInput } from "../core/state.js";
import { describeLocation } from "../store/location.js";
import { isPostgresOutage, POSTGRES_CONNECTION_OPTIONS, waitForStore } from "../store/outage.js";
import { quietConnectionErrors } from "../store/pg-connections.js";
import { HEARTBEAT_TABLE_SQL, type Heartbeats, startHeartbeat } from "./heartbeat.js";
import { type JobSlot, startJobSlot } from "./job-slot.js";
import { OutageWatch, type QueueOutageEvent } from "./outage-watch.js";
import { withSchemaSetupLock } from "./setup.js";
import { announceJobs, type JobListener, listenForJobs } from "./wake.js";

/** The default `onOutage`: one line on stderr each way. */
function describeQueueOutage(event: QueueOutageEvent): void {
  process.stderr.write(
    event.kind === "away"
      ? `selfheal queue: the database is away (${event.reason}); waiting for it, the queue goes on when it answers\n`
      : `selfheal queue: the database answered again after ${(event.waitedMs / 1000).toFixed(1)} s\n`,
  );
}

/** The pg-boss queue that holds one job per thread, and the one its jobs go to when retries run out. */
export const RUN_QUEUE = "selfheal-runs";
export const DEAD_LETTER_QUEUE = "selfheal-runs-dead";

/** How jobs are retried and expired; pg-boss stores these on each job when it is sent. */

/** What a job carries: the thread to run and the input it starts from. Settings live in the run store. */
export interface RunJobData {
  threadId: string;
  input: RunInput;
}

/** How often this instance runs pg-boss's maintenance (which expires dead workers' jobs), and whether it supervises at all. */
export interface QueueOpenOptions {
  maintenanceIntervalSeconds?: number;
  supervise?: boolean;
  /**
   * Told once when the queue's database goes away and once when it answers again (pg-boss retries
   * on its own meanwhile); by default a line on stderr each.
   */
  onOutage?: (event: QueueOutageEvent) => void;
}

export interface QueueLocation {
  url: string;
  schema: string;
}

/** A job's place in its life, as `selfheal runs` shows it. */
export type QueueState = "queued" | "running" | "finished" | "dead-lettered" | "cancelled";

export interface QueuedRun {
  threadId: string;
  jobId: string;
  state: QueueState;
  priority: number;
  /** Deliveries after the first so far: retries and deliveries taken over from a dead worker. */
  retries: number;
  /** What the handler returned (a finished job) or the error it threw (a retried or dead-lettered one). */
  output?: unknown;
  /** The error of the last failed delivery, for a job waiting to be retried or dead-lettered. */
  reason?: string;
  worker?: string;
  heartbeatAt?: string;
  step?: string;
}

/** One delivery of a job to a handler. `signal` aborts when the job is cancelled or its delivery expires. */
export interface Delivery {
  jobId: string;
  data: RunJobData;
  signal: AbortSignal;
  /** Tells `runs` what the job is doing now (the node that just ran). */
  setStep(step: string): void;
  /** True once a heartbeat has found the job cancelled. */
  wasCancelled(): boolean;
}

export interface WorkOptions {
  /** Jobs this process runs at once. */
  concurrency: number;
  pollingIntervalSeconds: number;
  /** How often the worker writes its heartbeat and looks whether its jobs were cancelled. */
  heartbeatSeconds: number;
}

/** This process as `runs` names it: host:pid. */
export function workerName(): string {
  return `${hostname()}:${process.pid}`;
}

const PG_BOSS_STATE_TO_QUEUE_STATE: Record<string, QueueState> = {
  created: "queued",
  retry: "queued",
  active: "running",
  completed: "finished",
  failed: "dead-lettered",
  cancelled: "cancelled",
};

function failureMessage(output: unknown): string | undefined {
  if (typeof output !== "object" || output === null) return undefined;
  const message = (output as { message?: unknown; value?: { message?: unknown } }).message;
  const nested = (output as { value?: { message?: unknown } }).value?.message;
  return typeof message === "string" ? message : typeof nested === "string" ? nested : undefined;
}

interface JobRow {
  id: string;
  state: string;
  priority: number;
  retry_count: number;
  thread_id: string;
  output: unknown;
  worker: string | null;
  heartbeat_at: Date | null;
  step: string | null;
}

/**
 * The run queue on pg-boss: submit, work, cancel, list. pg-boss owns delivery (SKIP LOCKED fetch,
 * expiry, retries with backoff, the dead-letter queue); this adds what selfheal needs on top: one
 * job per thread, a heartbeat per running job, and cancellation that reaches a running thread.
 */
export class TaskQueue {
  /** Where the queue lives; a frozen copy, so a caller that changes its own object changes nothing here. */
  readonly location: Readonly<QueueLocation>;
  /** The announcement listeners of `work()` calls not yet stopped, closed with the queue. */
  private readonly listeners = new Set<JobListener>();
  /** The job slots of `work()` calls, stopped and waited for when the queue closes. */
  private readonly slots = new Set<JobSlot>();
  /** Completions of finished jobs still being written, awaited (within the grace) before pg-boss stops. */
  private readonly completions = new Set<Promise<void>>();
  /** Final heartbeats of finished jobs still being written, awaited before the queue closes. */
  private readonly lastBeats = new Set<Promise<void>>();

  private constructor(
    location: QueueLocation,
    private readonly schema: QueueSchemaName,
    private readonly boss: PgBoss,
    private readonly pool: pg.Pool,
    private readonly watch: OutageWatch,
  ) {
    this.location = Object.freeze({ url: location.url, schema });
  }

  /** Starts pg-boss in `location.schema`, creating its tables and the two queues on first use. */
  static async open(location: QueueLocation, options: QueueOpenOptions = {}): Promise<TaskQueue> {
    const schema = checkSchemaName(location.schema);
    const boss = new PgBoss({
      connectionString: location.url,
      schema,
      application_name: `selfheal queue ${workerName()}`,
      max: 4,
      ...POSTGRES_CONNECTION_OPTIONS,
      supervise: options.supervise ?? true,
      // Maintenance is what expires a dead worker's job; pg-boss lets one instance run it per interval.
      maintenanceIntervalSeconds: options.maintenanceIntervalSeconds ?? 30,
      schedule: false,
    });
    const pool = new pg.Pool({ connectionString: location.url, max: 2, ...POSTGRES_CONNECTION_OPTIONS });
    quietConnectionErrors(pool);
    const watch = new OutageWatch(pool, options.onOutage ?? describeQueueOutage, (error) =>
      process.stderr.write(`selfheal queue: ${error.message}\n`),
    );
    boss.on("error", watch.report);
    try {
      await withSchemaSetupLock(pool, schema, async (client) => {
        await boss.start();
        await client.query(HEARTBEAT_TABLE_SQL(schema));
        // Both are no-ops when the queue exists (pg-boss inserts ON CONFLICT DO NOTHING).
        await boss.createQueue(DEAD_LETTER_QUEUE);
        await boss.createQueue(RUN_QUEUE, { name: RUN_QUEUE, deadLetter: DEAD_LETTER_QUEUE });
      });
    } catch (error) {
      watch.close();
      await boss.stop({ graceful: false, wait: false }).catch(() => undefined);
      await pool.end();
      throw new StoreConnectionError(
        `cannot start the queue in PostgreSQL at ${describeLocation({ kind: "postgres", url: location.url })}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    return new TaskQueue(location, schema, boss, pool, watch);
  }

  async submit(jobs: Array<RunJobData & { priority?: number }>, delivery: DeliveryPolicy): Promise<string[]> {
    const ids: string[] = [];
    for (const { priority, ...data } of jobs) {
      const id = await this.boss.send(RUN_QUEUE, data, {
        priority: priority ?? 0,
        retryLimit: delivery.retryLimit,
        retryDelay: delivery.retryDelaySeconds,
        retryBackoff: true,
        expireInSeconds: delivery.expireInSeconds,
        deadLetter: DEAD_LETTER_QUEUE,
      });
      if (!id) throw new Error(`the queue refused the job for thread ${data.threadId}`);
      ids.push(id);
      // Idle workers fetch now rather than at their next poll (a lost announcement costs only that
      // poll): once the first job is in, so that it does not wait for the rest to be sent, and
      // again after the last, for the workers that found nothing in between.
      if (ids.length === 1 || ids.length === jobs.length)
        await announceJobs(this.pool, this.schema).catch(() => undefined);
    }
    return ids;
  }

  /**
   * Takes jobs until `stop()`: what `handle` returns completes the job, what it throws fails the
   * delivery (pg-boss retries it with backoff, then dead-letters it). `concurrency` slots each run
   * one job at a time, which is the per-process limit. `stop()` on what it returns ends the
   * fetching (running handlers go on; their caller decides how they end).
   */
  async work(
    options: WorkOptions,
    handle: (delivery: Delivery) => Promise<object>,
  ): Promise<{ stop(): Promise<void> }> {
    const worker = workerName();
    const slots: JobSlot[] = [];
    // An announcement wakes the idle slots at once; polling stays the fallback.
    const listener = listenForJobs(this.location.url, this.schema, () => {
      for (const slot of slots) slot.wake();
    });
    this.listeners.add(listener);
    const runJob = async (job: PgBoss.Job<RunJobData>): Promise<object> => {
      const heartbeat: Heartbeats = startHeartbeat(this.pool, this.schema, {
        jobId: job.id,
        threadId: job.data.threadId,
        worker,
        everySeconds: options.heartbeatSeconds,
        queue: RUN_QUEUE,
      });
      // The slot gives up on a handler at the expiry and fails the job; stopping the run a second
      // before (as on Ctrl-C, checkpoints kept) frees its thread for the next delivery.
      const expired = AbortSignal.timeout(Math.max(1, job.expireInSeconds - 1) * 1000);
      try {
        const outcome = await handle({
          jobId: job.id,
          data: job.data,
          signal: AbortSignal.any([heartbeat.cancelled, expired]),
          setStep: heartbeat.setStep,
          wasCancelled: () => heartbeat.cancelled.aborted,
        });
        // A finished job has no next delivery whose row this beat could overwrite: it goes on
        // beside the job's completion and the next fetch instead of before them.
        this.settleLater(this.lastBeats, heartbeat.stop());
        return outcome;
      } catch (error) {
        await heartbeat.stop();
        throw error;
      }
    };
    const complete = (jobId: string, outcome: object) =>
      this.settleLater(this.completions, this.completePatiently(jobId, outcome));
    for (let index = 0; index < options.concurrency; index++) {
      const slot = startJobSlot(
        this.boss,
        { queue: RUN_QUEUE, pollingIntervalSeconds: options.pollingIntervalSeconds, complete },
        runJob,
      );
      slots.push(slot);
      this.slots.add(slot);
      void slot.done.then(() => this.slots.delete(slot));
    }
    return {
      stop: async () => {
        this.listeners.delete(listener);
        await listener.close();
        for (const slot of slots) slot.stop();
      },
    };
  }

  /** Keeps `promise` in `pending` until it settles, so that `close()` can wait for it. */
  private settleLater(pending: Set<Promise<void>>, promise: Promise<void>): Promise<void> {
    const tracked: Promise<void> = promise.finally(() => pending.delete(tracked));
    pending.add(tracked);
    return tracked;
  }

  /**
   * Completes a finished job, waiting for the database as a run does: pg-boss's own loop completed
   * it once, without waiting, and a job whose run ended while the database was away stayed active
   * until it expired (half an hour by default), and was then delivered again only to find its run
   * finished. Past the wait the job is left to expire, as before.
   */
  private async completePatiently(jobId: string, outcome: object): Promise<void> {
    await waitForStore(() => this.boss.complete(RUN_QUEUE, jobId, outcome), {
      operation: `completing job ${jobId}`,
      boundMs: DEFAULT_STORE_WAIT_SECONDS * 1000,
      isOutage: isPostgresOutage,
      where: describeLocation({ kind: "postgres", url: this.location.url }),
      report: () => undefined,
    }).catch((error) => this.watch.report(error));
  }

  /** For what found the queue's database away outside pg-boss: told as one outage with pg-boss's own. */
  reportOutage(error: Error): void {
    this.watch.report(error);
  }

  /** Cancels the jobs of these threads that have not finished; a running one is stopped by its next heartbeat. */
  async cancel(threadIds: string[]): Promise<string[]> {
    const { rows } = await this.pool.query<{ id: string; thread_id: string }>(
      `SELECT id, data->>'threadId' AS thread_id FROM ${this.schema}.job
       WHERE name = $1 AND data->>'threadId' = ANY($2) AND state < 'completed'`,
      [RUN_QUEUE, threadIds],
    );
    if (rows.length > 0)
      await this.boss.cancel(
        RUN_QUEUE,
        rows.map((row) => row.id),
      );
    return rows.map((row) => row.thread_id);
  }

  /** Jobs waiting or running, the quantity `worker --until-empty` waits on. */
  async pendingCount(): Promise<number> {
    const { rows } = await this.pool.query<{ pending: string }>(
      `SELECT count(*) AS pending FROM ${this.schema}.job WHERE name = $1 AND state < 'completed'`,
      [RUN_QUEUE],
    );
    return Number(rows[0]?.pending ?? 0);
  }

  list(threadId?: string): Promise<QueuedRun[]> {
    return listQueuedRuns(this.pool, this.schema, threadId);
  }

  /**
   * Stops taking jobs; waits up to `graceMs` for running ones to end (they are aborted first by the
   * caller) and for finished ones to be completed, then fails those still running, as pg-boss's
   * graceful stop did for its own loop, so that they are delivered again without waiting for expiry.
   */
  async close(graceMs = 10_000): Promise<void> {
    await Promise.all([...this.listeners].map((listener) => listener.close()));
    this.listeners.clear();
    const slots = [...this.slots];
    this.slots.clear();
    for (const slot of slots) slot.stop();
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, graceMs);
    });
    await Promise.race([Promise.all(slots.map((slot) => slot.done)).then(() => Promise.all(this.completions)), grace]);
    clearTimeout(timer);
    const stranded = slots.flatMap((slot) => (slot.current ? [slot.current] : []));
    const shutDown = new Error("the worker shut down while the job was running");
    await Promise.all(
      stranded.map((id) => this.boss.fail(RUN_QUEUE, id, shutDown).catch((error: Error) => this.watch.report(error))),
    );
    await this.boss.stop({ graceful: true, wait: true, timeout: graceMs });
    await Promise.all(this.lastBeats);
    this.watch.close();
    await this.pool.end();
  }
}

/**
 * Every job of the run queue, live and archived, with the heartbeat of the worker that has it.
 * A read only: it needs no pg-boss instance, and finds nothing when the schema does not exist.
 */
async function listQueuedRuns(pool: pg.Pool, schema: QueueSchemaName, threadId?: string): Promise<QueuedRun[]> {
  const { rows: exists } = await pool.query<{ job: string | null }>("SELECT to_regclass($1) AS job", [`${schema}.job`]);
  if (!exists[0]?.job) return [];
  const columns = "id, state::text AS state, priority, retry_count, data->>'threadId' AS thread_id, output, created_on";
  const which = "name = $1 AND ($2::text IS NULL OR data->>'threadId' = $2)";
  const { rows } = await pool.query<JobRow>(
    `SELECT j.*, h.worker, h.heartbeat_at, h.step FROM (
       SELECT ${columns} FROM ${schema}.job WHERE ${which}
       UNION ALL SELECT ${columns} FROM ${schema}.archive WHERE ${which}
     ) j LEFT JOIN ${schema}.selfheal_heartbeats h ON h.job_id = j.id
     ORDER BY j.created_on`,
    [RUN_QUEUE, threadId ?? null],
  );
  return rows.map((row) => {
    const state = PG_BOSS_STATE_TO_QUEUE_STATE[row.state] ?? "queued";
    const reason = row.state === "retry" || row.state === "failed" ? failureMessage(row.output) : undefined;
    return {
      threadId: row.thread_id,
      jobId: row.id,
      state,
      priority: row.priority,
      retries: row.retry_count,
      ...(row.output !== null ? { output: row.output } : {}),
      ...(reason ? { reason } : {}),
      ...(row.worker ? { worker: row.worker } : {}),
      ...(row.heartbeat_at ? { heartbeatAt: row.heartbeat_at.toISOString() } : {}),
      ...(row.step ? { step: row.step } : {}),
    };
  });
}

/** The queue's jobs for `selfheal runs`, read straight from PostgreSQL; empty when no queue was ever made. */
export async function readQueuedRuns(location: QueueLocation): Promise<QueuedRun[]> {
  const schema = checkSchemaName(location.schema);
  const pool = new pg.Pool({ connectionString: location.url, max: 1, ...POSTGRES_CONNECTION_OPTIONS });
  quietConnectionErrors(pool);
  try {
    return await listQueuedRuns(pool, schema);
  } finally {
    await pool.end();
  }
}
