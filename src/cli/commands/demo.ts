import type { Command } from "commander";
import { addReportOption, allowPackageOption, pythonOption, sandboxOption } from "../options.js";
import { addStoreOptions, type StoreFlags } from "../store-options.js";
import type { RunFlags } from "./start-run.js";
import { SUMMARIES } from "./summaries.js";

type DemoFlags = StoreFlags &
  Pick<RunFlags, "json" | "sandbox" | "python" | "allowPackage" | "artifacts" | "report"> & { data?: boolean };

/** `selfheal demo`: a real run of the scripted demo model, no API key needed. */
export function registerDemoCommand(program: Command): void {
  const command = program
    .command("demo")
    .description(SUMMARIES.demo)
    .option("--json", "print a JSON result instead of the code")
    .option("--data", "the data task instead: read sales.csv with pandas, save a matplotlib chart as out/chart.png")
    .option("--artifacts <dir>", "copy the files the kept attempt wrote under out/ into this folder at the end")
    .addOption(sandboxOption())
    // The data demo's hints name these when the Python it finds lacks pandas or matplotlib.
    .addOption(pythonOption())
    .addOption(allowPackageOption());
  addStoreOptions(addReportOption(command)).action(async ({ data, ...flags }: DemoFlags) => {
    // Loaded once the flags are read, as for `run` (see run-command.ts).
    const { startRun } = await import("./start-run.js");
    const python = { ...flags, language: "python" };
    // Checkpointed like any run, so `selfheal runs` and `selfheal history` show the embedded store at work.
    if (data) {
      const demo = await import("../data-demo-model.js");
      process.exitCode = await startRun(demo.DATA_DEMO_TASK, python, {
        model: demo.createDataDemoModel(),
        banner: demo.DATA_DEMO_BANNER,
        input: demo.DATA_DEMO_INPUT,
      });
    } else {
      const demo = await import("../demo-model.js");
      process.exitCode = await startRun(demo.DEMO_TASK, python, {
        model: demo.createDemoModel(),
        banner: demo.DEMO_BANNER,
      });
    }
  });
}
