import { Command } from "commander";
import { didYouMean } from "../names.js";
import { COMMANDS } from "./commands/catalog.js";
import { EXIT } from "./exit.js";
import { colorsFor, terminalStyle } from "./terminal.js";
import { packageVersion } from "./version.js";

/**
 * A usage error from commander in the CLI's own style: one line, `selfheal: ` and the message, an
 * invalid value said as `--flag must be ... (got X)`, as the settings say theirs, and a pointer to
 * the help of the command it came from (not the whole help, which would scroll the message away).
 */
export function usageLine(commanderText: string, helpCommand: string): string {
  const message = commanderText.replace(/^error:\s*/, "").trim();
  // commander names an option by all its flags and its value (`-l, --language <lang>`): the long one says it.
  const flag = (flags: string) => flags.split(/[\s,|]+/).find((word) => word.startsWith("--")) ?? flags;
  const invalid = /^option '([^']*)' argument '([\s\S]*)' is invalid\. ([\s\S]*)$/.exec(message);
  const missing = /^option '([^']*)' argument missing$/.exec(message);
  const said = invalid
    ? `${flag(invalid[1]!)} ${invalid[3]!.replace(/^Allowed choices are ([\s\S]*?)\.?$/, "must be one of $1")} (got ${JSON.stringify(invalid[2])})`
    : missing
      ? `${flag(missing[1]!)} needs a value`
      : message;
  return `${said.replace(/\s*\n\s*/g, " ")} (see \`${helpCommand} --help\`)`;
}

/** A usage error as the CLI prints each one: `selfheal:` in red where colours are on, and usageLine. */
function usageErrorLine(commanderText: string, helpCommand: string): string {
  const red = colorsFor(terminalStyle(process.stderr)).red;
  return `${red("selfheal:")} ${usageLine(commanderText, helpCommand)}\n`;
}

function pointToHelp(command: Command, path: string): void {
  command.configureOutput({ outputError: (text, write) => write(usageErrorLine(text, path)) });
  for (const sub of command.commands) pointToHelp(sub, `${path} ${sub.name()}`);
}

/**
 * The commands `argv` names: the first operand (`selfheal run ...`), or the one after `help`
 * (`selfheal help run`); none for `--version`, `--help` or nothing at all. Top-level selfheal has
 * no options that take a value, so the first word without a dash is the command.
 */
export function commandsNamed(argv: readonly string[]): string[] {
  const operands = argv.slice(2).filter((word) => !word.startsWith("-"));
  return operands[0] === "help" ? operands.slice(1, 2) : operands.slice(0, 1);
}

/**
 * The CLI's commands: those `argv` names loaded in full, the others as a name and a line of help
 * only, so a command pays for its own imports and no other's (`--version` for none at all).
 * Without `argv`, every command is loaded.
 */
export async function buildProgram(argv?: readonly string[]): Promise<Command> {
  const program = new Command("selfheal")
    .description("An LLM that writes a program, runs it in a sandbox, and repairs it from the real traceback.")
    .version(packageVersion(), "-V, --version", "print the version")
    .exitOverride();
  const wanted = argv ? commandsNamed(argv) : COMMANDS.map((entry) => entry.name);
  for (const entry of COMMANDS) {
    if (wanted.includes(entry.name)) (await entry.load())(program);
    else program.command(`${entry.name} ${entry.operands}`.trim()).description(entry.summary);
  }
  pointToHelp(program, "selfheal");
  return program;
}

export async function main(argv: string[] = process.argv): Promise<number> {
  // commander answers `help <unknown>` with the whole help on stderr: one line, as for `selfheal <unknown>`.
  const [first, named] = argv.slice(2).filter((word) => !word.startsWith("-"));
  if (first === "help" && named !== undefined && !COMMANDS.some((entry) => entry.name === named)) {
    // Spelt as commander spells its own suggestion for `selfheal <unknown>`.
    const suggestion = didYouMean(
      named,
      COMMANDS.map((entry) => entry.name),
    ).replace("did you", "Did you");
    process.stderr.write(usageErrorLine(`unknown command '${named}'${suggestion}`, "selfheal"));
    return EXIT.usage;
  }
  try {
    // Built inside the try: the help shows defaults read from the environment, which may be bad.
    await (await buildProgram(argv)).parseAsync(argv);
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
    // Loaded only now: --version and --help need neither zod nor the error classes.
    const { formatIssues, SelfhealError } = await import("../settings.js");
    const { z } = await import("zod");
    // Every error selfheal raises on purpose is a usage or configuration problem the user can fix.
    if (error instanceof SelfhealError) {
      process.stderr.write(`selfheal: ${error.message}\n`);
      return error.code === "STORE_UNAVAILABLE" ? EXIT.storeUnavailable : EXIT.usage;
    }
    // The database went away under a command that reads or writes runs: one line, not a stack trace.
    const { describeOutage, isPostgresOutage, isSqliteOutage } = await import("../store/index.js");
    if (isPostgresOutage(error) || isSqliteOutage(error)) {
      process.stderr.write(
        `selfheal: the run store did not answer (${describeOutage(error)}); try again when it is back\n`,
      );
      return EXIT.storeUnavailable;
    }
    if (error instanceof z.ZodError) {
      process.stderr.write(`selfheal: ${formatIssues(error)}\n`);
      return EXIT.usage;
    }
    throw error;
  }
}
