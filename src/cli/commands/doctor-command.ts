import type { Command } from "commander";
import type { SandboxKind } from "../../names.js";
import { sandboxOption } from "../options.js";
import { SUMMARIES } from "./summaries.js";

// What `selfheal doctor` takes, declared with nothing heavy behind it (see run-command.ts): a usage error
// or its help loads no sandbox, schema or graph.

/** `selfheal doctor`. */
export function registerDoctorCommand(program: Command): void {
  program
    .command("doctor")
    .description(SUMMARIES.doctor)
    .addOption(sandboxOption())
    .option("--json", "print JSON")
    .action(async (flags: { sandbox?: SandboxKind; json?: boolean }) => {
      await (await import("./doctor.js")).runDoctor(flags);
    });
}
