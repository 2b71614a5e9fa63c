import type { Command } from "commander";
import { addStoreOptions, type StoreFlags } from "../store-options.js";
import { SUMMARIES } from "./summaries.js";

// What `selfheal history` takes, declared with nothing heavy behind it (see run-command.ts).

/** `selfheal history <thread>`. */
export function registerHistoryCommand(program: Command): void {
  const command = program
    .command("history")
    .description(SUMMARIES.history)
    .argument("<thread>", "the thread id")
    .option("--json", "print JSON");
  addStoreOptions(command).action(async (threadId: string, flags: StoreFlags & { json?: boolean }) => {
    process.exitCode = await (await import("./history.js")).showHistory(threadId, flags);
  });
}
