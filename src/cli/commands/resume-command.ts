import type { Command } from "commander";
import { addModelCallOptions, addOutputOptions, addReportOption, addSettingOptions } from "../options.js";
import { addStoreOptions } from "../store-options.js";
import type { ResumeFlags } from "./resume-run.js";
import { SUMMARIES } from "./summaries.js";

// What `selfheal resume` takes, declared with nothing heavy behind it (see run-command.ts); the resume
// itself loads once the flags are read.

/** `selfheal resume <thread>`. */
export function registerResumeCommand(program: Command): void {
  const command = program
    .command("resume")
    .description(SUMMARIES.resume)
    .argument("<thread>", "the thread id printed by `selfheal run`")
    .option("--approve", "approve the program waiting for approval")
    .option("--reject <reason>", "reject it; the reason reaches the fixer like an error")
    .option("--edit <file>", "run the program in this file instead")
    .option(
      "--from <checkpoint>",
      "time travel: fork the run from this checkpoint (see `selfheal history`) into a new thread",
    )
    .option("--thread <id>", "with --from: the new thread's id (default: a new random id)");
  addModelCallOptions(addOutputOptions(addSettingOptions(command)));
  addStoreOptions(addReportOption(command)).action(async (threadId: string, flags: ResumeFlags) => {
    const { resumeRun } = await import("./resume-run.js");
    process.exitCode = await resumeRun(threadId, flags);
  });
}
