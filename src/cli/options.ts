import { existsSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { resolve } from "node:path";
import { type Command, InvalidArgumentError, Option } from "commander";
import {
  flagOf,
  InvalidSettingsError,
  SETTING_TABLE,
  type SettingSpec,
  type SettingTable,
  UsageError,
} from "../names.js";
import type { ModelCallsMode } from "../settings.js";

/**
 * The setting flags as commander reads them, by attribute (`--max-attempts` is `maxAttempts`,
 * `--timeout` is `timeout`); `settingsFromFlags` turns the given ones into settings.
 */
export interface SettingFlags {
  readonly [attribute: string]: unknown;
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

/** A number as a person types one: digits with at most one point and a sign (`Number()` alone takes `0x1`, `""`). */
function decimal(value: string): number {
  if (!/^[+-]?(\d+(\.\d*)?|\.\d+)$/.test(value)) throw new InvalidArgumentError("must be a number");
  return Number(value);
}

/** `Rounds before ...` as commander's help words it: `rounds before ...`. */
const helpWords = (help: string): string =>
  /^[A-Z][a-z]/.test(help) ? help.charAt(0).toLowerCase() + help.slice(1) : help;

/**
 * A setting's flag, declared from its entry in the setting table: the value's parser or choices,
 * and the help with the default. No default is given to commander: an absent flag must stay
 * undefined, so `resume` keeps the run's own setting.
 */
export function settingOption(key: string, table: SettingTable = SETTING_TABLE): Option {
  const spec = table[key];
  const flag = spec && flagOf(key, spec);
  if (!spec || !flag) throw new Error(`setting ${key} has no flag`);
  const option = new Option(flag, helpWords(spec.help) + defaultWords(spec));
  switch (spec.kind) {
    case "integer":
      return option.argParser(integer);
    case "number":
      return option.argParser(decimal);
    case "choice":
      return option.choices(spec.choices);
    default:
      return option;
  }
}

/**
 * ` (1 to 100, default 4)`: a number's bounds, and the default where the help does not say it
 * already (one read from the environment) and there is one.
 */
function defaultWords(spec: SettingSpec): string {
  if (spec.kind === "boolean") return spec.default ? ": on by default, this flag turns it off" : "";
  const words: string[] = [];
  if (spec.kind === "integer" || spec.kind === "number")
    words.push(spec.max === undefined ? `at least ${spec.min}` : `${spec.min} to ${spec.max}`);
  if (spec.kind !== "group" && spec.default !== null && typeof spec.default !== "function")
    words.push(`default ${spec.default}`);
  return words.length > 0 ? ` (${words.join(", ")})` : "";
}

/** The `--sandbox` flag, on every command that runs programs. */
export const sandboxOption = (): Option => settingOption("sandbox");

/** The `--python` flag, on the commands that run Python programs a person starts. */
export const pythonOption = (): Option => settingOption("python");

/** The `--allow-package` flag, on `run` and `demo`: their hints name it when a module is missing. */
export function allowPackageOption(): Option {
  return new Option(
    "--allow-package <spec...>",
    "packages the program may import, installed on first need: NAME[@version] for the run's language, or python:NAME / javascript:NAME",
  );
}

/** The `--allow-host` flag, on `run`: the `allowHosts` setting, one host a value. */
export function allowHostOption(): Option {
  return new Option(
    "--allow-host <host...>",
    "hosts the program may reach over HTTP(S), through a proxy that refuses all others: NAME[:PORT], *.DOMAIN[:PORT] (no port: 80 and 443)",
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
 * A flag for every setting of the table that has one, in the table's order. Defaults read from the
 * environment are not read here (the help names the variable): a bad one fails when the flags are
 * laid over the settings, as it would fail the run.
 */
export function addSettingOptions(command: Command, table: SettingTable = SETTING_TABLE): Command {
  command.addHelpText("after", MODEL_HELP);
  for (const [key, spec] of Object.entries(table)) {
    if (flagOf(key, spec)) command.addOption(settingOption(key, table));
  }
  return command;
}

/**
 * Only the settings whose flags were given, ready to lay over stored or default settings. A
 * `--no-...` flag that was not given reads as true in commander: only its false is a given value.
 */
export function settingsFromFlags(flags: SettingFlags, table: SettingTable = SETTING_TABLE): Record<string, unknown> {
  const given: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(table)) {
    const flag = flagOf(key, spec);
    if (!flag) continue;
    const option = new Option(flag);
    const value = flags[option.attributeName()];
    if (value === undefined || (option.negate && value === true)) continue;
    given[key] = value;
  }
  return given;
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
