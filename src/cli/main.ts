import { readFileSync } from "node:fs";
import { Command } from "commander";
import { z } from "zod";
import { formatIssues, SelfhealError } from "../index.js";
import { registerBenchCommand } from "./commands/bench.js";
import { registerCancelCommand } from "./commands/cancel.js";
import { registerDemoCommand } from "./commands/demo.js";
import { registerDoctorCommand } from "./commands/doctor.js";
import { registerHistoryCommand } from "./commands/history.js";
import { registerMcpCommand } from "./commands/mcp.js";
import { registerReportCommand } from "./commands/report.js";
import { registerResumeCommand } from "./commands/resume.js";
import { registerRunCommand } from "./commands/run.js";
import { registerRunsCommand } from "./commands/runs.js";
import { registerSubmitCommand } from "./commands/submit.js";
import { registerWorkerCommand } from "./commands/worker.js";
import { EXIT } from "./stream-run.js";
import { colorsFor, terminalStyle } from "./terminal.js";

export { UsageError } from "./session.js";

/** The installed package's version; package.json sits two levels up from src/cli/ and from dist/cli/ alike. */
export function packageVersion(): string {
  const manifest: unknown = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
  return typeof manifest === "object" && manifest !== null && "version" in manifest
    ? String(manifest.version)
    : "unknown";
}

/**
 * A usage error is one line and a pointer to the help of the command it came from, not the
 * whole help: the message is what a person needs to read, and it would scroll away.
 */
function pointToHelp(command: Command, path: string): void {
  const red = colorsFor(terminalStyle(process.stderr)).red;
  command
    .showHelpAfterError(`(see \`${path} --help\`)`)
    .configureOutput({ outputError: (text, write) => write(text.replace(/^error:/, red("error:"))) });
  for (const sub of command.commands) pointToHelp(sub, `${path} ${sub.name()}`);
}

export function buildProgram(): Command {
  const program = new Command("selfheal")
    .description("An LLM that writes a program, runs it in a sandbox, and repairs it from the real traceback.")
    .version(packageVersion(), "-V, --version", "print the version")
    .exitOverride();

  registerRunCommand(program);
  registerResumeCommand(program);
  registerHistoryCommand(program);
  registerRunsCommand(program);
  registerReportCommand(program);
  registerSubmitCommand(program);
  registerWorkerCommand(program);
  registerCancelCommand(program);
  registerDemoCommand(program);
  registerBenchCommand(program);
  registerDoctorCommand(program);
  registerMcpCommand(program, packageVersion());
  pointToHelp(program, "selfheal");
  return program;
}

export async function main(argv: string[] = process.argv): Promise<number> {
  try {
    // Built inside the try: the help shows defaults read from the environment, which may be bad.
    await buildProgram().parseAsync(argv);
    return typeof process.exitCode === "number" ? process.exitCode : EXIT.passed;
  } catch (error) {
    if (
      error instanceof Error &&
      "exitCode" in error &&
      typeof error.exitCode === "number" &&
      error.name === "CommanderError"
    ) {
      // commander already printed the message (or the help); --help and --version exit 0.
      return error.exitCode === 0 ? 0 : EXIT.usage;
    }
    // Every error selfheal raises on purpose is a usage or configuration problem the user can fix.
    if (error instanceof SelfhealError) {
      process.stderr.write(`selfheal: ${error.message}\n`);
      return EXIT.usage;
    }
    if (error instanceof z.ZodError) {
      process.stderr.write(`selfheal: ${formatIssues(error)}\n`);
      return EXIT.usage;
    }
    throw error;
  }
}
