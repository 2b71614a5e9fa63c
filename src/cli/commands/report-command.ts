import type { Command } from "commander";
import { addStoreOptions } from "../store-options.js";
import type { ReportFlags } from "./report.js";
import { SUMMARIES } from "./summaries.js";

// What `selfheal report` takes, declared with nothing heavy behind it (see run-command.ts).

/** `selfheal report <thread>`. */
export function registerReportCommand(program: Command): void {
  const command = program
    .command("report")
    .description(SUMMARIES.report)
    .argument("<thread>", "the thread id")
    .option("-o, --out <file>", "where to write it (default selfheal-report-<thread>.html)")
    .option("--open", "open it in the desktop's browser once written");
  addStoreOptions(command).action(async (threadId: string, flags: ReportFlags) => {
    process.exitCode = await (await import("./report.js")).writeReportCommand(threadId, flags);
  });
}
