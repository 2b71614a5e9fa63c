import { Option } from "commander";
import { flagOf, SETTING_TABLE, type SettingSpec } from "../names.js";
import {
  type AllowHosts,
  AllowHostsSchema,
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

/** `--max-attempts` for `maxAttempts`: the flag a person typed, so an error can name it. */
function flagNameOf(key: string): string | undefined {
  const spec = SETTING_TABLE[key as keyof typeof SETTING_TABLE] as SettingSpec | undefined;
  const flag = spec && flagOf(key, spec);
  return flag && new Option(flag).long;
}

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
    const flag = key in fromFlags ? flagNameOf(key) : undefined;
    const field = flag ?? (issue.path.join(".") || "settings");
    const rest = key !== "" && issue.message.startsWith(key) ? issue.message.slice(key.length) : `: ${issue.message}`;
    const given = flag ? ` (got ${JSON.stringify(fromFlags[key])})` : "";
    return `${field}${rest}${given}`;
  });
  throw new InvalidSettingsError(problems.join("; "));
}

/** `--allow-host` values as the `allowHosts` setting; a bad one is reported under the flag's name. */
export function allowHostsFromFlags(hosts: readonly string[]): AllowHosts {
  const parsed = AllowHostsSchema.safeParse(hosts);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => issue.message.replace(/^allowHosts entry/, "--allow-host"));
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
