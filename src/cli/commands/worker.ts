import { checkModelConfig, modelRetriesFromEnv } from "../../internal.js";
import { startWorker, surviveQueueOutages, type TaskQueue, type WorkerEvent, workerName } from "../../queue/index.js";
import type { RunStore } from "../../store/index.js";
import { createDemoModel, DEMO_MODEL_NAME } from "../demo-model.js";
import { EXIT } from "../exit.js";
import type { QueueFlags } from "../queue-options.js";
import { resolveQueueLocation, withQueue } from "../queue-session.js";
import { withStore } from "../session.js";

export interface WorkerFlags extends QueueFlags {
  concurrency: number;
  modelCallsPerMinute?: number;
  burst?: number;
  pollInterval: number;
  heartbeat: number;
  expiryCheck: number;
  untilEmpty?: boolean;
  json?: boolean;
}

function describeEvent(event: WorkerEvent): string {
  switch (event.event) {
    case "started":
      return `started (job ${event.jobId})`;
    case "step":
      return `${event.node} done`;
    case "finished":
      return `finished ${event.status} after ${event.attempts} attempt(s), ${event.tokens} tokens`;
    case "retrying":
      return `will be retried: ${event.error}`;
    case "cancelled":
      return "cancelled; stopped, checkpoints kept";
    case "store_waiting":
      return `waiting for the run store (${event.operation}): ${event.reason}; up to ${event.waitSeconds} s`;
    case "store_back":
      return `the run store answered again after ${(event.waitedMs / 1000).toFixed(1)} s; the run goes on`;
  }
}

/** One line per event: JSON on stdout with --json, else a sentence on stderr. */
function reporter(json: boolean | undefined): (event: WorkerEvent) => void {
  const worker = workerName();
  return (event) => {
    if (json) {
      process.stdout.write(`${JSON.stringify({ worker, ...event })}\n`);
      return;
    }
    process.stderr.write(`worker ${worker}: thread ${event.threadId}: ${describeEvent(event)}\n`);
  };
}

/** Resolves on SIGINT or SIGTERM, or (with `untilEmpty`) once no job is waiting or running. */
function untilStopped(queue: TaskQueue, flags: WorkerFlags): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      clearInterval(timer);
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    const timer = setInterval(async () => {
      if (flags.untilEmpty && (await queue.pendingCount().catch(() => 1)) === 0) stop();
    }, flags.pollInterval * 1000);
  });
}

async function work(store: RunStore, queue: TaskQueue, flags: WorkerFlags): Promise<number> {
  // The demo's scripted model answers from the messages alone, so one serves every job, and with it
  // the worker's one compiled agent: a model per job meant an agent compiled per job.
  const demoModel = createDemoModel();
  const worker = await startWorker(queue, {
    store,
    concurrency: flags.concurrency,
    pollingIntervalSeconds: flags.pollInterval,
    heartbeatSeconds: flags.heartbeat,
    ...(flags.modelCallsPerMinute
      ? { modelCallRate: { perMinute: flags.modelCallsPerMinute, burst: flags.burst ?? 1 } }
      : {}),
    // A run the demo recorded gets the demo's scripted model back; any other builds its own from the environment.
    modelFor: (settings) => (settings.model === DEMO_MODEL_NAME ? demoModel : undefined),
    onEvent: reporter(flags.json),
  });
  process.stderr.write(
    `worker ${workerName()}: taking jobs from ${queue.location.schema} (concurrency ${flags.concurrency})\n`,
  );
  const stopGuard = surviveQueueOutages((error) => queue.reportOutage(error));
  try {
    await untilStopped(queue, flags);
    // The caller then closes the queue, which waits for pg-boss to let go of the stopped runs' jobs.
    await worker.stop();
  } finally {
    stopGuard();
  }
  return EXIT.passed;
}

/** `selfheal worker`: takes jobs from the queue and runs each as a checkpointed thread. */
export async function runWorker(flags: WorkerFlags): Promise<number> {
  checkModelConfig();
  modelRetriesFromEnv();
  const location = resolveQueueLocation(flags);
  return await withStore(flags, (store) =>
    withQueue(location, { maintenanceIntervalSeconds: flags.expiryCheck }, (queue) => work(store, queue, flags)),
  );
}
