import { SharedSandboxes } from "../internal.js";
import { ModelCallGate, type ModelCallRate, SharedTokenBucket } from "./rate-limit.js";
import { type QueuedRunDeps, type QueuedRunOutcome, runQueuedThread } from "./run-thread.js";
import type { Delivery, TaskQueue, WorkOptions } from "./task-queue.js";

/** What a worker tells its owner about each job; `selfheal worker` prints one line per event. */
export type WorkerEvent =
  | { event: "started" | "step"; threadId: string; jobId: string; node?: string }
  | { event: "finished"; threadId: string; jobId: string; status: string; attempts: number; tokens: number }
  | { event: "retrying"; threadId: string; jobId: string; error: string }
  | { event: "cancelled"; threadId: string; jobId: string }
  /** The run waits for its store (see `storeWaitSeconds`), and, once it answers, goes on. */
  | { event: "store_waiting"; threadId: string; jobId: string; operation: string; reason: string; waitSeconds: number }
  | { event: "store_back"; threadId: string; jobId: string; waitedMs: number };

export interface WorkerOptions extends Omit<QueuedRunDeps, "onStep" | "sandboxes">, Partial<WorkOptions> {
  /**
   * The sandboxes for a run's `sandbox` and `sandboxPoolSize` settings. By default the worker makes
   * its own, shared by its jobs (a sandbox keeps interpreters warm after first use, which a sandbox
   * made per job would throw away), and closes them when it stops; given ones are the caller's to close.
   */
  sandboxes?: SharedSandboxes;
  /** At most this many model calls a minute across every worker on the queue's database that gives the same rate. */
  modelCallRate?: ModelCallRate;
  onEvent?: (event: WorkerEvent) => void;
}

export interface RunningWorker {
  /**
   * Stops taking jobs and stops the running threads between steps (as on Ctrl-C: checkpoints
   * kept, the job delivered again later, to this worker or another), waits up to `graceMs` for
   * them, then closes the sandboxes and the rate bucket it made. The caller closes the queue.
   */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Takes jobs from `queue` and runs each as a checkpointed thread (see `runQueuedThread`): what a
 * run ends with completes the job; a failure outside the run (model server, sandbox, database,
 * expiry) fails the delivery, which pg-boss retries and then dead-letters; a cancelled job stops.
 */
export async function startWorker(queue: TaskQueue, options: WorkerOptions): Promise<RunningWorker> {
  const {
    onEvent,
    modelCallRate,
    concurrency = 1,
    pollingIntervalSeconds = 2,
    heartbeatSeconds = 5,
    sandboxes,
    callbacks,
    ...runDeps
  } = options;
  const bucket = modelCallRate
    ? await SharedTokenBucket.open(queue.location.url, queue.location.schema, "model-calls", modelCallRate)
    : undefined;
  const owned = sandboxes ? undefined : new SharedSandboxes();
  const deps: Omit<QueuedRunDeps, "onStep"> = {
    ...runDeps,
    sandboxes: sandboxes ?? owned,
    callbacks: bucket ? [...(callbacks ?? []), new ModelCallGate(bucket)] : callbacks,
  };
  // Aborted on stop: running threads end between steps, and their jobs are delivered again.
  const shutdown = new AbortController();
  const running = new Set<Promise<unknown>>();
  const jobOfThread = new Map<string, string>();
  const stopWatching = runDeps.store.onWait((wait) => {
    const jobId = wait.threadId === undefined ? undefined : jobOfThread.get(wait.threadId);
    if (!jobId || !wait.threadId || wait.kind === "gave_up") return;
    const ids = { threadId: wait.threadId, jobId };
    onEvent?.(
      wait.kind === "waiting"
        ? {
            event: "store_waiting",
            ...ids,
            operation: wait.operation,
            reason: wait.reason,
            waitSeconds: Math.round(wait.boundMs / 1000),
          }
        : { event: "store_back", ...ids, waitedMs: wait.waitedMs },
    );
  });

  async function handle(delivery: Delivery): Promise<QueuedRunOutcome | { cancelled: true }> {
    const ids = { threadId: delivery.data.threadId, jobId: delivery.jobId };
    onEvent?.({ event: "started", ...ids });
    jobOfThread.set(ids.threadId, ids.jobId);
    try {
      const outcome = await runQueuedThread(
        { ...delivery, signal: AbortSignal.any([delivery.signal, shutdown.signal]) },
        { ...deps, onStep: (node) => onEvent?.({ event: "step", ...ids, node }) },
      );
      onEvent?.({ event: "finished", ...ids, ...outcome });
      return outcome;
    } catch (error) {
      // pg-boss leaves a cancelled job cancelled whatever the handler does: nothing to retry.
      if (delivery.wasCancelled()) {
        onEvent?.({ event: "cancelled", ...ids });
        return { cancelled: true };
      }
      onEvent?.({ event: "retrying", ...ids, error: error instanceof Error ? error.message : String(error) });
      throw error;
    } finally {
      if (jobOfThread.get(ids.threadId) === ids.jobId) jobOfThread.delete(ids.threadId);
    }
  }

  const taking = await queue.work({ concurrency, pollingIntervalSeconds, heartbeatSeconds }, (delivery) => {
    const run = handle(delivery);
    running.add(run);
    void run.catch(() => undefined).finally(() => running.delete(run));
    return run;
  });

  return {
    async stop(graceMs = 10_000) {
      await taking.stop();
      shutdown.abort(new Error("the worker is shutting down"));
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise((resolve) => {
        timer = setTimeout(resolve, graceMs);
      });
      await Promise.race([Promise.allSettled([...running]), grace]);
      clearTimeout(timer);
      stopWatching();
      await owned?.close();
      await bucket?.close();
    },
  };
}
