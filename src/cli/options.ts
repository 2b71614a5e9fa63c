import { existsSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { resolve } from "node:path";
import { type Command, InvalidArgumentError, Option } from "commander";
import { flagDefaults, InvalidSettingsError, SANDBOX_KINDS, STRATEGIES, UsageError } from "../names.js";
import type { ModelCallsMode, SettingsInput } from "../settings.js";

/** The run settings `run` takes and `resume` may change (e.g. another model for a fork). */
export interface SettingFlags {
  maxAttempts?: number;
  tokenBudget?: number;
  timeout?: number;
  modelTimeout?: number;
  model?: string;
  sandbox?: SettingsInput["sandbox"];
  sandboxPool?: number;
  llmReview?: boolean;
  candidates?: number;
  strategy?: SettingsInput["strategy"];
  python?: string;
  memoryMb?: number;
  cpuSeconds?: number;
  maxProcesses?: number;
  maxFileMb?: number;
  maxDiskMb?: number;
  maxOutputBytes?: number;
  storeWait?: number;
}

/**
 * A whole number as a person types one: digits, with a sign at most. `Number()` alone also takes
 * `1e1`, `0x10`, ` 5 ` and the empty string (0), so `--max-attempts 1e1` ran ten attempts while
 * `2.5` was refused.
 */
function wholeNumber(value: string, atLeast?: number): number {
  const parsed = /^[+-]?\d+$/.test(value) ? Number(value) : Number.NaN;
  const wanted = atLeast === undefined ? "a whole number" : `a whole number of at least ${atLeast}`;
  if (!Number.isSafeInteger(parsed) || (atLeast !== undefined && parsed < atLeast))
    throw new InvalidArgumentError(`must be ${wanted}`);
  return parsed;
}

export const positiveInteger = (value: string): number => wholeNumber(value, 1);
export const nonNegativeInteger = (value: string): number => wholeNumber(value, 0);
export const integer = (value: string): number => wholeNumber(value);

/** A parser for a number of seconds no smaller than `min` (pg-boss polls at most every 0.5 s). */
export function secondsAtLeast(min: number): (value: string) => number {
  return (value) => {
    const parsed = /^\d+(\.\d+)?$/.test(value) ? Number(value) : Number.NaN;
    if (!(parsed >= min)) throw new InvalidArgumentError(`must be a number of seconds, at least ${min}`);
    return parsed;
  };
}

/**
 * The text of a file a flag names, or a usage error that says what is wrong with the path: not
 * there, a folder, or unreadable.
 */
export async function readFlagFile(flag: string, path: string): Promise<string> {
  const info = await stat(path).catch(() => undefined);
  if (!info) throw new UsageError(`${flag} ${path}: no such file`);
  if (info.isDirectory()) throw new UsageError(`${flag} ${path} is a folder; give a file`);
  return readFile(path, "utf8").catch((error: NodeJS.ErrnoException) => {
    throw new UsageError(`${flag} ${path}: cannot read it (${error.code ?? error.message})`);
  });
}

/** The `--sandbox` flag, on every command that runs programs. */
export function sandboxOption(): Option {
  return new Option("--sandbox <kind>", `sandbox backend (default ${flagDefaults().sandbox})`).choices(SANDBOX_KINDS);
}

/** The `--python` flag, on the commands that run Python programs a person starts. */
export function pythonOption(): Option {
  return new Option(
    "--python <path>",
    "the Python that runs programs (default $SELFHEAL_PYTHON, else python3 on PATH; `selfheal doctor` lists those found)",
  );
}

/** The `--allow-package` flag, on `run` and `demo`: their hints name it when a module is missing. */
export function allowPackageOption(): Option {
  return new Option(
    "--allow-package <spec...>",
    "packages the program may import, installed on first need: NAME[@version] for the run's language, or python:NAME / javascript:NAME",
  );
}

/** Where a run's model is set, which no flag says: the help of every command that calls one ends with it. */
export const MODEL_HELP = `
Which model answers:
  OPENAI_API_KEY=sk-...                       OpenAI (the model is --model or $SELFHEAL_MODEL)
  OPENAI_BASE_URL=http://localhost:11434/v1   any OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio)
  selfheal demo                               a scripted model: no key, no server
\`selfheal doctor\` says which one a run would call.`;

/**
 * The setting flags. No defaults given to commander: an absent flag must stay undefined, so
 * `resume` keeps the run's own setting; the help shows the defaults. An environment that sets a
 * bad model timeout fails here, as it would fail the run.
 */
export function addSettingOptions(command: Command): Command {
  const defaults = flagDefaults();
  return command
    .addHelpText("after", MODEL_HELP)
    .option("--max-attempts <n>", `programs to execute before giving up (default ${defaults.maxAttempts})`, integer)
    .option("--token-budget <n>", `total tokens the run may spend (default ${defaults.tokenBudget})`, integer)
    .option("--timeout <ms>", `wall-clock limit per execution (default ${defaults.timeoutMs})`, integer)
    .option("-m, --model <name>", `model name (default ${defaults.model}; or set $SELFHEAL_MODEL)`)
    .option(
      "--model-timeout <ms>",
      `how long one model request may wait (default ${defaults.modelTimeoutMs}; or set $SELFHEAL_MODEL_TIMEOUT_MS)`,
      integer,
    )
    .addOption(sandboxOption())
    .option(
      "--sandbox-pool <n>",
      `interpreters kept warm per language by the bwrap and process sandboxes (default ${defaults.sandboxPoolSize})`,
      integer,
    )
    .addOption(pythonOption())
    .option("--llm-review", "ask the critic model to review runs that have no tests")
    .option(
      "--candidates <n>",
      `programs written and run in parallel per round (default ${defaults.candidates})`,
      integer,
    )
    .addOption(
      new Option("--strategy <name>", `after a failed round of candidates (default ${defaults.strategy})`).choices([
        ...STRATEGIES,
      ]),
    )
    .option("--memory-mb <n>", `memory per execution, MiB (default ${defaults.memoryMb})`, integer)
    .option("--cpu-seconds <n>", `CPU seconds per execution (default ${defaults.cpuSeconds})`, integer)
    .option("--max-processes <n>", `processes per execution (default ${defaults.maxProcesses})`, integer)
    .option("--max-file-mb <n>", `largest file an execution may write, MiB (default ${defaults.maxFileMb})`, integer)
    .option("--max-disk-mb <n>", `disk per execution, MiB (default ${defaults.maxDiskMb})`, integer)
    .option(
      "--max-output-bytes <n>",
      `stdout and stderr kept per execution, each (default ${defaults.maxOutputBytes})`,
      integer,
    )
    .option(
      "--store-wait <seconds>",
      `how long the run waits for its run store to come back when it goes away, before it stops resumable (default ${defaults.storeWaitSeconds})`,
      integer,
    );
}

/** Only the flags that were given, ready to lay over stored or default settings. */
export function settingsFromFlags(flags: SettingFlags): Partial<SettingsInput> {
  const given: Partial<SettingsInput> = {
    maxAttempts: flags.maxAttempts,
    tokenBudget: flags.tokenBudget,
    timeoutMs: flags.timeout,
    modelTimeoutMs: flags.modelTimeout,
    model: flags.model,
    sandbox: flags.sandbox,
    sandboxPoolSize: flags.sandboxPool,
    llmReview: flags.llmReview,
    candidates: flags.candidates,
    strategy: flags.strategy,
    python: flags.python,
    memoryMb: flags.memoryMb,
    cpuSeconds: flags.cpuSeconds,
    maxProcesses: flags.maxProcesses,
    maxFileMb: flags.maxFileMb,
    maxDiskMb: flags.maxDiskMb,
    maxOutputBytes: flags.maxOutputBytes,
    storeWaitSeconds: flags.storeWait,
  };
  return Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined));
}

/** Where a command's result goes: the code on stdout, or JSON, or a file. */
/** `--report FILE`, for the commands that run: `run`, `demo`, `resume`. */
export function addReportOption(command: Command): Command {
  return command.option("--report <file>", "write a self-contained HTML report of the run to FILE when it stops");
}

export function addOutputOptions(command: Command): Command {
  return command
    .option("--json", "print a JSON result instead of the code")
    .option("-o, --out <file>", "write the result to a file instead of stdout");
}

/** `--record DIR` / `--replay DIR`, on the commands that call a model. */
export interface ModelCallFlags {
  record?: string;
  replay?: string;
}

export function addModelCallOptions(command: Command): Command {
  return command
    .addOption(
      new Option("--record <dir>", "write every model request and reply of the run to DIR").env("SELFHEAL_RECORD"),
    )
    .option(
      "--replay <dir>",
      "answer every model request from a folder --record wrote, with no model and no network (it wins over --record)",
    );
}

/** The `modelCalls` agent option the flags ask for, if any; a replay folder that is not there is a usage error. */
export function modelCallsFromFlags(flags: ModelCallFlags): ModelCallsMode | undefined {
  if (flags.replay) {
    if (!existsSync(flags.replay))
      throw new InvalidSettingsError(`no recorded model calls at ${resolve(flags.replay)}`);
    return { replay: flags.replay };
  }
  return flags.record ? { record: flags.record } : undefined;
}

/** The progress line that says where the run's model calls come from or go, when recorded or replayed. */
export function describeModelCalls(flags: ModelCallFlags): string | undefined {
  if (flags.replay) return `model calls replayed from ${resolve(flags.replay)}: no model is called`;
  return flags.record ? `recording model calls to ${resolve(flags.record)}` : undefined;
}
