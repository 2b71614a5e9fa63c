import type { BaseChannel } from "@langchain/langgraph";
import { type ZodType, z } from "zod";
import { parseAllowlist } from "./allowlist.js";
import { InvalidSettingsError } from "./errors.js";
import type { SandboxLimits } from "./limits.js";
import {
  DEFAULT_MODEL_TIMEOUT_MS,
  DEFAULT_STORE_WAIT_SECONDS,
  MAX_MODEL_TIMEOUT_MS,
  MIN_MODEL_TIMEOUT_MS,
  modelTimeoutFromEnv,
  STRATEGIES,
  type Strategy,
} from "./setting-names.js";
import {
  type IntegerSpec,
  MAX_ATTEMPTS_LIMIT,
  MAX_CANDIDATES,
  MAX_PROPOSED_INPUTS,
  MAX_SANDBOX_CONCURRENCY,
  type NumberSpec,
  SETTING_TABLE,
  type SettingSpec,
  type SettingTable,
  type TextSpec,
} from "./setting-table.js";
import { didYouMean } from "./spelling.js";

export {
  DEFAULT_MODEL_TIMEOUT_MS,
  DEFAULT_STORE_WAIT_SECONDS,
  MAX_ATTEMPTS_LIMIT,
  MAX_CANDIDATES,
  MAX_MODEL_TIMEOUT_MS,
  MAX_PROPOSED_INPUTS,
  MAX_SANDBOX_CONCURRENCY,
  MIN_MODEL_TIMEOUT_MS,
  modelTimeoutFromEnv,
  STRATEGIES,
  type Strategy,
};

export const DEFAULT_PACKAGE_INSTALL_TIMEOUT_MS = 120_000;

/**
 * One allowed package as pip or npm takes it: a name with an optional version (`requests==2.31`,
 * `left-pad@1.3.0`, `@scope/name`); no paths, URLs or flags, so an allowlist cannot smuggle in an
 * installer option.
 */
const PackageSpecSchema = z
  .string()
  .trim()
  .regex(
    /^@?[A-Za-z0-9][\w.@/=<>!~^,*+-]*$/,
    "a package must be a name with an optional version, such as left-pad@1.3.0",
  );

/** The packages a run may install, per language: nothing is installed unless it is listed here. */
export const PackagesSchema = z.strictObject({
  python: z.array(PackageSpecSchema).default(() => []),
  javascript: z.array(PackageSpecSchema).default(() => []),
});
export type Packages = z.infer<typeof PackagesSchema>;

/** How allowed packages are installed: where the cache is, how long an install may take, which index. */
export const PackageInstallSchema = z.strictObject({
  /** The install step's own wall-clock limit; past it the install is killed and reported to the fixer. */
  timeoutMs: z
    .number()
    .int()
    .min(100, "packageInstall.timeoutMs must be at least 100")
    .default(DEFAULT_PACKAGE_INSTALL_TIMEOUT_MS),
  /** The shared cache; null: `$SELFHEAL_PACKAGE_CACHE`, else `$XDG_CACHE_HOME/selfheal/packages` (~/.cache). */
  cacheDir: z.string().min(1).nullable().default(null),
  /** pip's `--index-url`; null: pip's own default (PyPI or pip.conf is not read: the installer's env is scrubbed). */
  pythonIndexUrl: z.string().min(1).nullable().default(null),
  /** A folder (or URL) of wheels for pip's `--find-links`; with `pythonIndexUrl` unset it also means `--no-index`. */
  pythonFindLinks: z.string().min(1).nullable().default(null),
  /** npm's `--registry`; null: `$npm_config_registry`, else registry.npmjs.org. */
  npmRegistry: z.string().min(1).nullable().default(null),
});
export type PackageInstall = z.infer<typeof PackageInstallSchema>;

/** The most entries `allowHosts` takes: a list longer than this is a list of the internet. */
export const MAX_ALLOW_HOSTS = 100;

/**
 * The hosts a run's programs may reach (core/allowlist.ts says what an entry may be): names with an
 * optional port and `*.`, or objects whose headers the egress proxy adds, read from the host's
 * environment. Every bad entry is reported at once.
 */
export const AllowHostsSchema = z
  .array(
    z.union([
      z.string(),
      z.strictObject({
        host: z.string(),
        headers: z.record(z.string(), z.string()).optional(),
        tls: z.literal("terminate").optional(),
      }),
    ]),
    { error: "allowHosts must be a list of hosts" },
  )
  .max(MAX_ALLOW_HOSTS, `allowHosts takes at most ${MAX_ALLOW_HOSTS} entries`)
  .superRefine((entries, context) => {
    const parsed = parseAllowlist(entries);
    if (!parsed.ok) for (const message of parsed.errors) context.addIssue({ code: "custom", message });
  });
export type AllowHosts = z.infer<typeof AllowHostsSchema>;

/** The schema of each setting of kind "group": a few fields of their own, validated together. */
const GROUP_SCHEMAS = {
  allowHosts: AllowHostsSchema.default(() => []),
  packages: PackagesSchema.default(() => ({ python: [], javascript: [] })),
  packageInstall: PackageInstallSchema.default(() => PackageInstallSchema.parse({})),
} as const;

/** A number within the spec's bounds, each message naming the setting. */
function boundedNumber(name: string, spec: IntegerSpec | NumberSpec) {
  let field = z.number({ error: `${name} must be a number` });
  if (spec.kind === "integer") field = field.int(`${name} must be a whole number`);
  if (spec.kind === "number") {
    const between = `${name} must be between ${spec.min} and ${spec.max}`;
    return field.min(spec.min, between).max(spec.max, between);
  }
  field = field.min(spec.min, spec.min === 0 ? `${name} must not be negative` : `${name} must be at least ${spec.min}`);
  return spec.max === undefined ? field : field.max(spec.max, `${name} must be at most ${spec.max}`);
}

function textField(name: string, spec: TextSpec) {
  const text = spec.trim ? z.string().trim() : z.string();
  return text.min(1, spec.emptyMessage ?? `${name} must not be empty`);
}

/** One setting's zod field, built from its entry in the setting table. */
function fieldOf(name: string, spec: SettingSpec): ZodType {
  switch (spec.kind) {
    case "integer":
    case "number": {
      const field = boundedNumber(name, spec);
      const fallback = spec.default;
      return (typeof fallback === "function" ? field.default(fallback) : field.default(fallback)).describe(spec.help);
    }
    case "boolean":
      return z
        .boolean({ error: `${name} must be true or false` })
        .default(spec.default)
        .describe(spec.help);
    case "choice":
      return z
        .enum(spec.choices, { error: `${name} must be one of: ${spec.choices.join(", ")}` })
        .default(spec.default)
        .describe(spec.help);
    case "text": {
      const fallback = spec.default;
      if (fallback === null) return textField(name, spec).nullable().default(null).describe(spec.help);
      return (
        typeof fallback === "function"
          ? textField(name, spec).default(fallback)
          : textField(name, spec).default(fallback)
      ).describe(spec.help);
    }
    case "group": {
      const group = GROUP_SCHEMAS[name as keyof typeof GROUP_SCHEMAS];
      if (!group) throw new Error(`setting ${name} is a group with no schema in GROUP_SCHEMAS`);
      return group.describe(spec.help);
    }
  }
}

/** The zod type each kind of setting becomes, so the schema built from a table keeps its types. */
type FieldOf<K, S> = K extends keyof typeof GROUP_SCHEMAS
  ? (typeof GROUP_SCHEMAS)[K]
  : S extends { kind: "integer" | "number" }
    ? z.ZodDefault<z.ZodNumber>
    : S extends { kind: "boolean" }
      ? z.ZodDefault<z.ZodBoolean>
      : S extends { kind: "choice"; choices: infer C extends readonly string[] }
        ? z.ZodDefault<z.ZodEnum<{ [V in C[number]]: V }>>
        : S extends { kind: "text"; default: null }
          ? z.ZodDefault<z.ZodNullable<z.ZodString>>
          : S extends { kind: "text" }
            ? z.ZodDefault<z.ZodString>
            : never;

export type SettingsShape<T extends SettingTable> = { -readonly [K in keyof T]: FieldOf<K, T[K]> };

/**
 * The settings schema of a setting table: strict, so a misspelt setting from JSON, Studio or the
 * queue (`maxAtempts`) is an error that names it, never silently a default. Tests build one from a
 * copy of the table to see a new setting reach every front end.
 */
export function settingsSchemaOf<T extends SettingTable>(table: T) {
  const shape = Object.fromEntries(Object.entries(table).map(([name, spec]) => [name, fieldOf(name, spec)]));
  return z.strictObject(shape as SettingsShape<T>);
}

/**
 * Run settings, passed as `invoke(input, { context })`, built from the setting table
 * (setting-table.ts), the only place their defaults, bounds and help live; nodes read them
 * through `parseSettings(runtime.context)`.
 */
export const SettingsSchema = settingsSchemaOf(SETTING_TABLE);

export type Settings = z.infer<typeof SettingsSchema>;

/** What a caller passes as `context`: every setting optional, the defaults fill in the rest. */
export type SettingsInput = z.input<typeof SettingsSchema>;

/** Every setting optional, for callers that validate a partial context themselves. */
export const ContextSchema = SettingsSchema.partial();

/**
 * The context as LangGraph's types see it: one optional channel per setting, so
 * `invoke(input, { context: { maxAttempts: 3 } })` type-checks. (Given a zod object, LangGraph 1.7
 * types the context as the schema's output with every key required, and at run time it validates
 * the context without filling in the defaults; selfheal applies them once, in `parseSettings` (graph/build.ts, `withSettings`).)
 */
export type ContextChannels = { [K in keyof SettingsInput]?: BaseChannel<Exclude<SettingsInput[K], undefined>> };

/**
 * Every node of a run resolves the same context object; parsing it once per run instead of once
 * per node is a few milliseconds an attempt. Frozen, so no node can change what another reads.
 */
const parsedContexts = new WeakMap<object, Settings>();

/** Validates settings and turns a zod failure into one readable line per bad field. */
export function parseSettings(input: unknown): Settings {
  if (typeof input !== "object" || input === null) return validateSettings(input);
  let settings = parsedContexts.get(input);
  if (!settings) {
    settings = Object.freeze(validateSettings(input));
    parsedContexts.set(input, settings);
  }
  return settings;
}

function validateSettings(input: unknown): Settings {
  const result = SettingsSchema.safeParse(input ?? {});
  if (!result.success) throw new InvalidSettingsError(formatIssues(result.error));
  return checkSettingCombinations(result.data);
}

/**
 * The rules between settings that each field's own bounds cannot say; every path that makes
 * settings (parseSettings, the CLI's flags) applies them before anything is saved.
 */
export function checkSettingCombinations(settings: Settings): Settings {
  // The gate shows a person one program before it runs; a round of candidates runs them at once.
  if (settings.approval && settings.candidates > 1)
    throw new InvalidSettingsError("approval works with one program at a time: set candidates to 1 to use it");
  return settings;
}

export { InvalidSettingsError };

export function formatIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const field = issue.path.join(".") || "input";
      if (issue.code === "unrecognized_keys") return unknownKeys(issue.path, issue.keys);
      return issue.message.startsWith(field) ? issue.message : `${field}: ${issue.message}`;
    })
    .join("; ");
}

/** `unknown setting "maxAtempts" (did you mean maxAttempts?)`, naming the known one closest in spelling. */
function unknownKeys(path: PropertyKey[], keys: string[]): string {
  const known = Object.keys(path.length === 0 ? SettingsSchema.shape : knownKeysAt(path));
  return keys.map((key) => `unknown setting "${[...path, key].join(".")}"${didYouMean(key, known)}`).join("; ");
}

function knownKeysAt(path: PropertyKey[]): Record<string, unknown> {
  const nested = { packages: PackagesSchema.shape, packageInstall: PackageInstallSchema.shape } as const;
  return nested[path[0] as keyof typeof nested] ?? {};
}

/** The sandbox limits a run's settings ask for, as the executor passes them in each RunRequest. */
export function limitsFromSettings(settings: Settings): SandboxLimits {
  const { timeoutMs, memoryMb, cpuSeconds, maxProcesses, maxFileMb, maxDiskMb, maxOutputBytes } = settings;
  const { maxConnections, maxNetworkMb } = settings;
  return {
    timeoutMs,
    memoryMb,
    cpuSeconds,
    maxProcesses,
    maxFileMb,
    maxDiskMb,
    maxOutputBytes,
    maxConnections,
    maxNetworkMb,
  };
}
