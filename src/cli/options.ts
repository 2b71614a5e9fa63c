import { InvalidArgumentError, Option, type Command } from "commander";
import { InvalidSettingsError, SettingsSchema, type Settings, type SettingsInput } from "../graph/context.js";

/** The run settings `run` takes and `resume` may change (e.g. another model for a fork). */
export interface SettingFlags {
  maxAttempts?: number;
  tokenBudget?: number;
  timeout?: number;
  modelTimeout?: number;
  model?: string;
  sandbox?: SettingsInput["sandbox"];
  llmReview?: boolean;
}

function integer(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed)) throw new InvalidArgumentError("expected a whole number");
  return parsed;
}

/** No defaults here: an absent flag must stay undefined, so `resume` keeps the run's own setting. */
export function addSettingOptions(command: Command): Command {
  return command
    .option("--max-attempts <n>", "programs to execute before giving up (default 4)", integer)
    .option("--token-budget <n>", "total tokens the run may spend (default 40000)", integer)
    .option("--timeout <ms>", "wall-clock limit per execution (default 10000)", integer)
    .option("-m, --model <name>", "model name (default $SELFHEAL_MODEL or gpt-4o-mini)")
    .option("--model-timeout <ms>", "how long one model request may wait (default $SELFHEAL_MODEL_TIMEOUT_MS or 120000)", integer)
    .addOption(new Option("--sandbox <kind>", "sandbox backend").choices(["auto", "bwrap", "process", "container"]))
    .option("--llm-review", "ask the critic model to review runs that have no tests");
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
    llmReview: flags.llmReview,
  };
  return Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined));
}

/** The flag that sets each setting, so an error names what the person typed. */
const FLAG_FOR_SETTING: Partial<Record<keyof SettingsInput, string>> = {
  maxAttempts: "--max-attempts",
  tokenBudget: "--token-budget",
  timeoutMs: "--timeout",
  model: "--model",
  sandbox: "--sandbox",
  llmReview: "--llm-review",
};

/**
 * The settings of a run: `base` (stored or preset settings) with the given flags laid over it.
 * A bad value that came from a flag is reported under the flag's name, with the value given
 * (`--max-attempts must be at least 1 (got 0)`); any other under its setting key.
 */
export function settingsWithFlags(base: Partial<SettingsInput>, flags: SettingFlags): Settings {
  const fromFlags = settingsFromFlags(flags);
  const result = SettingsSchema.safeParse({ ...base, ...fromFlags });
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const key = String(issue.path[0] ?? "");
    const flag = key in fromFlags ? FLAG_FOR_SETTING[key as keyof SettingsInput] : undefined;
    const field = flag ?? (issue.path.join(".") || "settings");
    const rest = key !== "" && issue.message.startsWith(key) ? issue.message.slice(key.length) : `: ${issue.message}`;
    const given = flag ? ` (got ${JSON.stringify(fromFlags[key as keyof SettingsInput])})` : "";
    return `${field}${rest}${given}`;
  });
  throw new InvalidSettingsError(problems.join("; "));
}

/** Where a command's result goes: the code on stdout, or JSON, or a file. */
export function addOutputOptions(command: Command): Command {
  return command.option("--json", "print a JSON result instead of the code").option("-o, --out <file>", "write the result to a file instead of stdout");
}
