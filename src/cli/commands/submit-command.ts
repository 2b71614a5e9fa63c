import { type Command, Option } from "commander";
import { DEFAULT_DELIVERY, LANGUAGES } from "../../names.js";
import { addSettingOptions, integer, nonNegativeInteger, positiveInteger } from "../options.js";
import { addQueueOptions } from "../queue-options.js";
import { addStoreOptions } from "../store-options.js";
import type { SubmitFlags } from "./submit.js";
import { SUMMARIES } from "./summaries.js";

// What `selfheal submit` takes, declared with nothing heavy behind it (see run-command.ts).

/** `selfheal submit`. */
export function registerSubmitCommand(program: Command): void {
  const command = program
    .command("submit")
    .description(SUMMARIES.submit)
    .argument("[task]", "what the program must do")
    .option(
      "-f, --file <tasks.jsonl>",
      'one JSON task per line: {"task": ..., "language"?, "tests"?, "thread"?, "priority"?}',
    )
    .addOption(new Option("-l, --language <language>", "language of the program").choices(LANGUAGES).default("python"))
    .option("-t, --tests <file>", "acceptance tests in the same language, run after the program")
    .option("--thread <id>", "thread id for this run (default: a new random id)")
    .option("--priority <n>", "higher runs are taken first (default 0)", integer)
    .option(
      "--retries <n>",
      `deliveries after a failed or lost one before the job is dead-lettered (default ${DEFAULT_DELIVERY.retryLimit})`,
      nonNegativeInteger,
    )
    .option(
      "--retry-delay <seconds>",
      `seconds before the first retry, doubled for each further one (default ${DEFAULT_DELIVERY.retryDelaySeconds})`,
      nonNegativeInteger,
    )
    .option(
      "--expire-in <seconds>",
      `how long one delivery may run before another worker takes it over (default ${DEFAULT_DELIVERY.expireInSeconds})`,
      positiveInteger,
    )
    .option("--json", "print the thread and job ids as JSON");
  addQueueOptions(addStoreOptions(addSettingOptions(command))).action(
    async (task: string | undefined, flags: SubmitFlags) => {
      process.exitCode = await (await import("./submit.js")).submitRuns(task, flags);
    },
  );
}
