import { type Command, Option } from "commander";
import { LANGUAGES } from "../../names.js";
import {
  addModelCallOptions,
  addOutputOptions,
  addReportOption,
  addSettingOptions,
  allowHostOption,
  allowPackageOption,
} from "../options.js";
import { addStoreOptions } from "../store-options.js";
import type { RunFlags } from "./start-run.js";
import { SUMMARIES } from "./summaries.js";

// What `selfheal run` takes, declared with nothing heavy behind it: a usage error is found before
// the graph, LangChain and the store load; the run itself is loaded once the flags are read.

/** `selfheal run <task>`. */
export function registerRunCommand(program: Command): void {
  const command = program
    .command("run")
    .description(SUMMARIES.run)
    .argument("<task>", "what the program must do")
    .addOption(new Option("-l, --language <language>", "language of the program").choices(LANGUAGES).default("python"))
    .option("-t, --tests <file>", "acceptance tests in the same language, run after the program")
    .addOption(allowPackageOption())
    .addOption(allowHostOption())
    .option("--input <files...>", "input files, put read-only into the program's working directory by base name")
    .option("--expect <names...>", "files the program must write under out/, e.g. out/chart.png")
    .option("--artifacts <dir>", "copy the files the kept attempt wrote under out/ into this folder at the end");
  addOutputOptions(
    addSettingOptions(command)
      .option("--approve", "pause before each execution for a person to approve, reject or edit the program")
      .option("--thread <id>", "thread id for this run (default: a new random id)"),
  );
  addModelCallOptions(command);
  addStoreOptions(addReportOption(command)).action(async (task: string, flags: RunFlags) => {
    const { startRun } = await import("./start-run.js");
    process.exitCode = await startRun(task, flags);
  });
}
