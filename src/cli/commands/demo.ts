import type { Command } from "commander";
import { createDataDemoModel, DATA_DEMO_BANNER, DATA_DEMO_INPUT, DATA_DEMO_TASK } from "../data-demo-model.js";
import { createDemoModel, DEMO_BANNER, DEMO_TASK } from "../demo-model.js";
import { addReportOption, sandboxOption } from "../options.js";
import { addStoreOptions, type StoreFlags } from "../session.js";
import { summaryOf } from "./catalog.js";
import { type RunFlags, startRun } from "./start-run.js";

type DemoFlags = StoreFlags & Pick<RunFlags, "json" | "sandbox" | "artifacts" | "report"> & { data?: boolean };

/** `selfheal demo`: a real run of the scripted demo model, no API key needed. */
export function registerDemoCommand(program: Command): void {
  const command = program
    .command("demo")
    .description(summaryOf("demo"))
    .option("--json", "print a JSON result instead of the code")
    .option("--data", "the data task instead: read sales.csv with pandas, save a matplotlib chart as out/chart.png")
    .option("--artifacts <dir>", "copy the files the kept attempt wrote under out/ into this folder at the end")
    .addOption(sandboxOption());
  addStoreOptions(addReportOption(command)).action(async ({ data, ...flags }: DemoFlags) => {
    // Checkpointed like any run, so `selfheal runs` and `selfheal history` show the embedded store at work.
    process.exitCode = data
      ? await startRun(
          DATA_DEMO_TASK,
          { ...flags, language: "python" },
          { model: createDataDemoModel(), banner: DATA_DEMO_BANNER, input: DATA_DEMO_INPUT },
        )
      : await startRun(DEMO_TASK, { ...flags, language: "python" }, { model: createDemoModel(), banner: DEMO_BANNER });
  });
}
