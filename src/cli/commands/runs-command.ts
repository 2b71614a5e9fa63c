import type { Command } from "commander";
import { positiveInteger } from "../options.js";
import { addQueueOptions } from "../queue-options.js";
import { addStoreOptions } from "../store-options.js";
import type { RunsFlags } from "./runs.js";
import { SUMMARIES } from "./summaries.js";

// What `selfheal runs` takes, declared with nothing heavy behind it (see run-command.ts).

/** `selfheal runs`. */
export function registerRunsCommand(program: Command): void {
  const command = program
    .command("runs")
    .description(SUMMARIES.runs)
    .option("--limit <n>", "show at most N runs, newest first", positiveInteger, 50)
    .option("--json", "print JSON");
  addQueueOptions(addStoreOptions(command)).action(async (flags: RunsFlags) => {
    process.exitCode = await (await import("./runs.js")).showRuns(flags);
  });
}
