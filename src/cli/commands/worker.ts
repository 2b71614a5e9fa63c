import type { Command } from "commander";
import { checkModelConfig, createSandbox, modelRetriesFromEnv, type SandboxKind } from "../../index.js";
import { type Delivery, ModelCallGate, SharedTokenBucket, type TaskQueue, workerName } from "../../queue/index.js";
import type { RunStore } from "../../store/index.js";
import { EXIT } from "../exit.js";
import { positiveInteger, secondsAtLeast } from "../options.js";
import { addQueueOptions, type QueueFlags, resolveQueueLocation, withQueue } from "../queue-session.js";
import { runQueuedThread } from "../queued-run.js";
import { addStoreOptions, closeSandboxes, withStore } from "../session.js";
import { summaryOf } from "./catalog.js";

interface WorkerFlags extends QueueFlags {
  concurrency: number;
  modelCallsPerMinute?: number;
  burst?: number;
  pollInterval: number;
  heartbeat: number;
  expiryCheck: number;
  untilEmpty?: boolean;
  json?: boolean;
}

type WorkerEvent =
  | { event: "started" | "step"; threadId: string; jobId: string; node?: string }
  | { event: "finished"; threadId: string; jobId: string; status: string; attempts: number; tokens: number }
  | { event: "retrying"; threadId: string; jobId: string; error: string }
  | { event: "cancelled"; threadId: string; jobId: string };

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

/** One sandbox per kind for the worker's life; `close` ends them when it stops. */
type WorkerSandbox = ReturnType<typeof createSandbox>;

function workerSandboxes() {
  const made = new Map<SandboxKind, WorkerSandbox>();
  return {
    sandboxFor(kind: SandboxKind): WorkerSandbox {
      let sandbox = made.get(kind);
      if (!sandbox) {
        sandbox = createSandbox({ kind });
        made.set(kind, sandbox);
      }
      return sandbox;
    },
    close: () => closeSandboxes(made.values()),
  };
}

interface WorkerParts {
  store: RunStore;
  queue: TaskQueue;
  sandboxes: ReturnType<typeof workerSandboxes>;
  gate?: ModelCallGate;
}

async function work({ store, queue, sandboxes, gate }: WorkerParts, flags: WorkerFlags): Promise<number> {
  const report = reporter(flags.json);
  // Aborted on shutdown: running threads stop (as on Ctrl-C), their jobs are retried elsewhere.
  const shutdown = new AbortController();
  await queue.work(
    { concurrency: flags.concurrency, pollingIntervalSeconds: flags.pollInterval, heartbeatSeconds: flags.heartbeat },
    async (delivery: Delivery) => {
      const ids = { threadId: delivery.data.threadId, jobId: delivery.jobId };
      report({ event: "started", ...ids });
      try {
        const outcome = await runQueuedThread(
          { ...delivery, signal: AbortSignal.any([delivery.signal, shutdown.signal]) },
          {
            store,
            sandboxFor: sandboxes.sandboxFor,
            callbacks: gate ? [gate] : undefined,
            onStep: (node) => report({ event: "step", ...ids, node }),
          },
        );
        report({ event: "finished", ...ids, ...outcome });
        return outcome;
      } catch (error) {
        // pg-boss leaves a cancelled job cancelled whatever the handler does: nothing to retry.
        if (delivery.wasCancelled()) {
          report({ event: "cancelled", ...ids });
          return { cancelled: true };
        }
        report({ event: "retrying", ...ids, error: error instanceof Error ? error.message : String(error) });
        throw error;
      }
    },
  );
  process.stderr.write(
    `worker ${workerName()}: taking jobs from ${queue.location.schema} (concurrency ${flags.concurrency})\n`,
  );
  await untilStopped(queue, flags);
  shutdown.abort(new Error("the worker is shutting down"));
  // The caller closes the queue (which waits for the aborted runs), then the sandboxes.
  return EXIT.passed;
}

/** `selfheal worker`: takes jobs from the queue and runs each as a checkpointed thread. */
export async function runWorker(flags: WorkerFlags): Promise<number> {
  checkModelConfig();
  modelRetriesFromEnv();
  const location = resolveQueueLocation(flags);
  const bucket = flags.modelCallsPerMinute
    ? await SharedTokenBucket.open(location.url, location.schema, "model-calls", {
        perMinute: flags.modelCallsPerMinute,
        burst: flags.burst ?? 1,
      })
    : undefined;
  const sandboxes = workerSandboxes();
  const gate = bucket ? new ModelCallGate(bucket) : undefined;
  try {
    return await withStore(flags, (store) =>
      withQueue(location, { maintenanceIntervalSeconds: flags.expiryCheck }, (queue) =>
        work({ store, queue, sandboxes, gate }, flags),
      ),
    );
  } finally {
    await sandboxes.close();
    await bucket?.close();
  }
}

/** `selfheal worker`. */
export function registerWorkerCommand(program: Command): void {
  const command = program
    .command("worker")
    .description(summaryOf("worker"))
    .option("-c, --concurrency <n>", "runs at once in this worker", positiveInteger, 1)
    .option(
      "--model-calls-per-minute <n>",
      "at most N model calls a minute across every worker that gives the same number (default: no limit)",
      positiveInteger,
    )
    .option("--burst <n>", "model calls allowed at once before the rate applies (default 1)", positiveInteger)
    .option(
      "--poll-interval <seconds>",
      "how often an idle worker looks for jobs (at least 0.5)",
      secondsAtLeast(0.5),
      2,
    )
    .option("--heartbeat <seconds>", "how often the worker records that it is alive", secondsAtLeast(0.1), 5)
    .option("--expiry-check <seconds>", "how often the queue looks for jobs whose worker has gone", positiveInteger, 30)
    .option("--until-empty", "exit once no job is waiting or running")
    .option("--json", "print one JSON line per event on stdout");
  addQueueOptions(addStoreOptions(command)).action(async (flags: WorkerFlags) => {
    process.exitCode = await runWorker(flags);
  });
}
