import type PgBoss from "pg-boss";

/** What a slot does with a fetched job: resolves with the job's output, or throws to fail the delivery. */
export type JobHandler<T> = (job: PgBoss.Job<T>) => Promise<object>;

export interface JobSlotOptions {
  queue: string;
  /** How long an idle slot waits before it looks again, unless `wake()` comes first. */
  pollingIntervalSeconds: number;
  /**
   * Records a finished job's output; the slot does not wait for it, and fetches the next job at
   * once. It must not reject (a failure to record is the caller's to report).
   */
  complete(jobId: string, output: object): Promise<void>;
}

export interface JobSlot {
  /** Makes an idle slot fetch now (jobs were announced, or the slot's own job just ended). */
  wake(): void;
  /** Ends the fetching; a running handler goes on, and its job is completed or failed as usual. */
  stop(): void;
  /** The job the slot is running now, if any: what a shutdown that cannot wait for it fails. */
  readonly current: string | undefined;
  /** Resolves once the slot has stopped and its last job has been handed to `complete` or failed. */
  readonly done: Promise<void>;
}

/**
 * One job at a time from `options.queue`, on pg-boss's fetch (SKIP LOCKED) and its delivery rules.
 * pg-boss's `work` loop did the same, but it completed each job itself after the handler returned,
 * a second completion after the one the handler waits out the database for (see
 * TaskQueue.completePatiently), and the slot fetched the next job only after that completion's
 * round trip. Here the completion goes on beside the next fetch, and happens once.
 */
export function startJobSlot<T>(boss: PgBoss, options: JobSlotOptions, handle: JobHandler<T>): JobSlot {
  let stopping = false;
  let woken = false;
  let current: string | undefined;
  let endWait: (() => void) | undefined;

  const idle = () =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, options.pollingIntervalSeconds * 1000);
      endWait = () => {
        clearTimeout(timer);
        resolve();
      };
    }).finally(() => {
      endWait = undefined;
    });

  const runOne = async (job: PgBoss.Job<T>) => {
    current = job.id;
    try {
      const output = await withinExpiry(handle(job), job.expireInSeconds);
      void options.complete(job.id, output);
    } catch (error) {
      // As pg-boss's own loop: a failed delivery is retried with backoff, then dead-lettered.
      await boss.fail(options.queue, job.id, error as object).catch(() => undefined);
    } finally {
      current = undefined;
    }
  };

  const loop = async () => {
    while (!stopping) {
      woken = false;
      // pg-boss's fetch answers no jobs when the database is away; the slot then looks again later.
      const [job] = await boss.fetch<T>(options.queue, { batchSize: 1 }).catch(() => []);
      if (job) await runOne(job);
      else if (!woken && !stopping) await idle();
    }
  };

  return {
    wake() {
      woken = true;
      endWait?.();
    },
    stop() {
      stopping = true;
      endWait?.();
    },
    get current() {
      return current;
    },
    done: loop(),
  };
}

/**
 * The handler's result, or a failure once the job's expiry has passed (pg-boss has failed such a
 * job by then anyway). The handler's own work goes on; the worker stops its run a second earlier.
 */
async function withinExpiry(work: Promise<object>, expireInSeconds: number): Promise<object> {
  const ms = Math.max(1, expireInSeconds) * 1000;
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`handler execution exceeded ${ms}ms`)), ms);
  });
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}
