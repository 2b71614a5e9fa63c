import { readFile } from "node:fs/promises";
import { Command, InvalidArgumentError, Option } from "commander";
import { z } from "zod";
import { createAgent } from "../graph/index.js";
import { formatIssues, InvalidSettingsError, parseSettings, type SettingsInput } from "../graph/context.js";
import { RunInputSchema, type RunInput } from "../graph/state.js";
import { hasModelConfig, MissingModelConfigError } from "../tools/models.js";
import { createDemoModel, DEMO_BANNER, DEMO_TASK } from "./demo.js";
import { EXIT, streamRun } from "./run.js";

/** A usage or configuration error: exit 2 with one clear line. */
export class UsageError extends Error {
  override name = "UsageError";
}

function integer(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed)) throw new InvalidArgumentError("expected a whole number");
  return parsed;
}

function validateInput(input: unknown): RunInput {
  const result = RunInputSchema.safeParse(input);
  if (!result.success) throw new UsageError(formatIssues(result.error));
  return result.data;
}

interface RunFlags {
  language: string;
  tests?: string;
  maxAttempts?: number;
  tokenBudget?: number;
  timeout?: number;
  model?: string;
  sandbox?: string;
  llmReview?: boolean;
  json?: boolean;
  out?: string;
}

function settingsFromFlags(flags: RunFlags): SettingsInput {
  return {
    maxAttempts: flags.maxAttempts,
    tokenBudget: flags.tokenBudget,
    timeoutMs: flags.timeout,
    model: flags.model,
    sandbox: flags.sandbox as SettingsInput["sandbox"],
    llmReview: flags.llmReview,
  };
}

export function buildProgram(): Command {
  const program = new Command("selfheal")
    .description("An LLM that writes a program, runs it in a sandbox, and repairs it from the real traceback.")
    .showHelpAfterError()
    .exitOverride();

  program
    .command("run")
    .description("solve a task: generate, execute, judge and fix until it passes or a budget says stop")
    .argument("<task>", "what the program must do")
    .addOption(new Option("-l, --language <language>", "language of the program").choices(["python", "javascript"]).default("python"))
    .option("-t, --tests <file>", "acceptance tests in the same language, run after the program")
    .option("--max-attempts <n>", "programs to execute before giving up (default 4)", integer)
    .option("--token-budget <n>", "total tokens the run may spend (default 40000)", integer)
    .option("--timeout <ms>", "wall-clock limit per execution (default 10000)", integer)
    .option("-m, --model <name>", "model name (default $SELFHEAL_MODEL or gpt-4o-mini)")
    .addOption(new Option("--sandbox <kind>", "sandbox backend").choices(["auto", "bwrap", "process", "container"]))
    .option("--llm-review", "ask the critic model to review runs that have no tests")
    .option("--json", "print a JSON result instead of the code")
    .option("-o, --out <file>", "write the result to a file instead of stdout")
    .action(async (task: string, flags: RunFlags) => {
      const tests = flags.tests ? await readFile(flags.tests, "utf8").catch(() => {
        throw new UsageError(`--tests: cannot read ${flags.tests}`);
      }) : undefined;
      const input = validateInput({ task, language: flags.language, tests });
      const settings = parseSettings(settingsFromFlags(flags));
      if (!hasModelConfig()) throw new MissingModelConfigError();
      process.exitCode = await streamRun(createAgent(), input, settings, { json: flags.json, out: flags.out });
    });

  program
    .command("demo")
    .description("watch a scripted model write a buggy program, see it crash, and fix it (no API key needed)")
    .option("--json", "print a JSON result instead of the code")
    .addOption(new Option("--sandbox <kind>", "sandbox backend").choices(["auto", "bwrap", "process", "container"]))
    .action(async (flags: { json?: boolean; sandbox?: string }) => {
      const settings = parseSettings({ model: "scripted-demo", sandbox: flags.sandbox });
      const agent = createAgent({ model: createDemoModel() });
      process.exitCode = await streamRun(agent, { task: DEMO_TASK, language: "python" }, settings, {
        json: flags.json,
        banner: DEMO_BANNER,
      });
    });

  return program;
}

export async function main(argv: string[] = process.argv): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === "number" ? process.exitCode : EXIT.passed;
  } catch (error) {
    if (error instanceof Error && "exitCode" in error && typeof error.exitCode === "number" && error.name === "CommanderError") {
      // commander already printed the message (or the help); --help and --version exit 0.
      return error.exitCode === 0 ? 0 : EXIT.usage;
    }
    if (error instanceof UsageError || error instanceof InvalidSettingsError || error instanceof MissingModelConfigError) {
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
