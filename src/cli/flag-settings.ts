import {
  checkSettingCombinations,
  InvalidSettingsError,
  LANGUAGES,
  type Language,
  type Packages,
  PackagesSchema,
  type Settings,
  type SettingsInput,
  SettingsSchema,
} from "../settings.js";
import { type SettingFlags, settingsFromFlags } from "./options.js";

// The flags read into settings, checked against the schema: a command's action loads this, its
// declaration (options.ts) does not.

/** Every setting's default, as the schema gives it (the model's two read the environment). */
export function settingDefaults(): Settings {
  return SettingsSchema.parse({});
}

/** The flag that sets each setting, so an error names what the person typed. */
const FLAG_FOR_SETTING: Partial<Record<keyof SettingsInput, string>> = {
  maxAttempts: "--max-attempts",
  tokenBudget: "--token-budget",
  timeoutMs: "--timeout",
  modelTimeoutMs: "--model-timeout",
  model: "--model",
  sandbox: "--sandbox",
  sandboxPoolSize: "--sandbox-pool",
  llmReview: "--llm-review",
  candidates: "--candidates",
  strategy: "--strategy",
  python: "--python",
  memoryMb: "--memory-mb",
  cpuSeconds: "--cpu-seconds",
  maxProcesses: "--max-processes",
  maxFileMb: "--max-file-mb",
  maxDiskMb: "--max-disk-mb",
  maxOutputBytes: "--max-output-bytes",
  storeWaitSeconds: "--store-wait",
};

/**
 * The settings of a run: `base` (stored or preset settings) with the given flags laid over it.
 * A bad value that came from a flag is reported under the flag's name, with the value given
 * (`--max-attempts must be at least 1 (got 0)`); any other under its setting key.
 */
export function settingsWithFlags(base: Partial<SettingsInput>, flags: SettingFlags): Settings {
  const fromFlags = settingsFromFlags(flags);
  const result = SettingsSchema.safeParse({ ...base, ...fromFlags });
  if (result.success) return checkSettingCombinations(result.data);
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

/**
 * `--allow-package` values as the `packages` setting: `python:NAME` or `javascript:NAME` for a
 * language, a bare NAME for the run's own language (an npm scope's `@` is no prefix).
 */
export function packagesFromFlags(specs: readonly string[] | undefined, runLanguage: Language): Packages {
  const packages: Packages = { python: [], javascript: [] };
  for (const given of specs ?? []) {
    const colon = given.indexOf(":");
    const prefix = colon === -1 ? "" : given.slice(0, colon);
    const language = (LANGUAGES as readonly string[]).includes(prefix) ? (prefix as Language) : runLanguage;
    packages[language].push(language === prefix ? given.slice(colon + 1) : given);
  }
  const result = PackagesSchema.safeParse(packages);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => {
      const [language, index] = issue.path as [Language, number];
      return `--allow-package ${JSON.stringify(packages[language][index])}: ${issue.message}`;
    });
    throw new InvalidSettingsError(problems.join("; "));
  }
  return result.data;
}
