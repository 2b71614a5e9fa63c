import type { Command } from "commander";
import { createDemoModel, DEMO_BANNER, DEMO_TASK } from "../demo-model.js";
import { addReportOption, sandboxOption } from "../options.js";
import { addStoreOptions, type StoreFlags } from "../session.js";
import { type RunFlags, startRun } from "./run.js";

/** `selfheal demo`: a real run of the scripted demo model, no API key needed. */
export function registerDemoCommand(program: Command): void {
  const command = program
    .command("demo")
    .description("watch a scripted model write a buggy program, see it crash, and fix it (no API key needed)")
    .option("--json", "print a JSON result instead of the code")
    .addOption(sandboxOption());
  addStoreOptions(addReportOption(command)).action(
    async (flags: StoreFlags & Pick<RunFlags, "json" | "sandbox" | "report">) => {
      // Checkpointed like any run, so `selfheal runs` and `selfheal history` show the embedded store at work.
      process.exitCode = await startRun(
        DEMO_TASK,
        { ...flags, language: "python" },
        { model: createDemoModel(), banner: DEMO_BANNER },
      );
    },
  );
}
