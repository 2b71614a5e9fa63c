import type { Command } from "commander";
import { positiveInteger, secondsAtLeast } from "../options.js";
import { addQueueOptions } from "../queue-options.js";
import { addStoreOptions } from "../store-options.js";
import { SUMMARIES } from "./summaries.js";
import type { WorkerFlags } from "./worker.js";

// What `selfheal worker` takes, declared with nothing heavy behind it (see run-command.ts).

/** `selfheal worker`. */
export function registerWorkerCommand(program: Command): void {
  const command = program
    .command("worker")
    .description(SUMMARIES.worker)
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
    process.exitCode = await (await import("./worker.js")).runWorker(flags);
  });
}
