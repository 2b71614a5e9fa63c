import type { Command } from "commander";
import { addQueueOptions, type QueueFlags } from "../queue-options.js";
import { addStoreOptions } from "../store-options.js";
import { SUMMARIES } from "./summaries.js";

// What `selfheal cancel` takes, declared with nothing heavy behind it (see run-command.ts).

/** `selfheal cancel`. */
export function registerCancelCommand(program: Command): void {
  const command = program
    .command("cancel")
    .description(SUMMARIES.cancel)
    .argument("<thread...>", "thread ids printed by `selfheal submit`");
  addQueueOptions(addStoreOptions(command)).action(async (threadIds: string[], flags: QueueFlags) => {
    process.exitCode = await (await import("./cancel.js")).cancelRuns(threadIds, flags);
  });
}
