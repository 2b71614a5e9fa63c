import type { BaseChannel } from "@langchain/langgraph";
import { z } from "zod";
import { InvalidSettingsError } from "./errors.js";
import { DEFAULT_LIMITS, LIMIT_BOUNDS, SANDBOX_POOL_SIZE, type SandboxLimits } from "./limits.js";
import { SandboxKindSchema, TestIsolationSchema } from "./run-result.js";
import {
  DEFAULT_MODEL_TIMEOUT_MS,
  DEFAULT_STORE_WAIT_SECONDS,
  defaultModelName,
  MAX_MODEL_TIMEOUT_MS,
  MIN_MODEL_TIMEOUT_MS,
  modelTimeoutFromEnv,
  SETTING_DEFAULTS,
  STRATEGIES,
  type Strategy,
} from "./setting-names.js";
import { didYouMean } from "./spelling.js";

export {
  DEFAULT_MODEL_TIMEOUT_MS,
  DEFAULT_STORE_WAIT_SECONDS,
  MAX_MODEL_TIMEOUT_MS,
  MIN_MODEL_TIMEOUT_MS,
  modelTimeoutFromEnv,
  STRATEGIES,
  type Strategy,
};

/**
 * The most attempts one run may take. The graph's recursion limit is derived from it, so any valid
 * setting ends through the routers (failed, stuck, budget) and never through GraphRecursionError.
 */
export const MAX_ATTEMPTS_LIMIT = 100;

/** The most candidates one round may write in parallel: each is a model call and a sandbox run at once. */
export const MAX_CANDIDATES = 16;
/** The most inputs the model may propose for telling candidates apart. */
export const MAX_PROPOSED_INPUTS = 10;
/** The most programs of one run in the sandbox at a time. */
export const MAX_SANDBOX_CONCURRENCY = 16;

/**
 * What a failed round of candidates leads to (with `candidates` 1 and `repair`, the loop as it
 * always was): `repair` mends the chosen program, one program a round; `resample` writes
 * `candidates` fresh programs every round and never repairs; `mixed` writes, every round after the
 * first, one repair of the chosen program beside `candidates - 1` fresh ones.
 */

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

/** A whole-number setting within bounds, each message naming the setting. */
/** A day: a run that waits longer for its database is better stopped and resumed. */
const MAX_STORE_WAIT_SECONDS = 86_400;
/** Three minutes: longer than a managed PostgreSQL's restart or failover takes. */

function boundedInteger(name: string, min: number, max: number, fallback: number) {
  return z
    .number({ error: `${name} must be a number` })
    .int(`${name} must be a whole number`)
    .min(min, min === 0 ? `${name} must not be negative` : `${name} must be at least ${min}`)
    .max(max, `${name} must be at most ${max}`)
    .default(fallback);
}

/** A sandbox limit as a setting: its default and bounds from core/limits.ts, the one place they live. */
function limitSetting(name: keyof SandboxLimits) {
  const { min, max } = LIMIT_BOUNDS[name];
  return boundedInteger(name, min, max, DEFAULT_LIMITS[name]);
}

/**
 * Run settings, passed as `invoke(input, { context })`. This is the only place defaults live;
 * nodes read them through `parseSettings(runtime.context)`. Strict: a misspelt setting from JSON,
 * Studio or the queue (`maxAtempts`) is an error that names it, never silently a default.
 */
export const SettingsSchema = z.strictObject({
  /**
   * Rounds before the run gives up as `failed`. A round is one program, or with `candidates` > 1
   * one fan-out of candidates written and run in parallel; a repair after it is a round too.
   */
  maxAttempts: boundedInteger("maxAttempts", 1, MAX_ATTEMPTS_LIMIT, SETTING_DEFAULTS.maxAttempts).describe(
    "Rounds (a program, or a round of candidates) before the run gives up",
  ),
  /**
   * Programs written and run in parallel in the first round (and in every round, with `resample`
   * or `mixed`); the verdict judges each, and a pass by any ends the run. 1: one program at a time.
   */
  candidates: boundedInteger("candidates", 1, MAX_CANDIDATES, SETTING_DEFAULTS.candidates).describe(
    "Programs written and run in parallel in a round; a pass by any ends the run",
  ),
  /** What follows a round in which no candidate passed; see STRATEGIES. */
  strategy: z
    .enum(STRATEGIES, { error: `strategy must be one of: ${STRATEGIES.join(", ")}` })
    .default(SETTING_DEFAULTS.strategy)
    .describe("What follows a round in which no candidate passed: repair, resample or mixed"),
  /**
   * Calls the model proposes once per run (in the first round of candidates, beside them) to tell
   * candidates apart when none passes: each is run on them, and those that agree form a group.
   * Python only; 0 (the default, as it costs a call per run): the tests' calls (or the output) alone.
   */
  proposedInputs: boundedInteger("proposedInputs", 0, MAX_PROPOSED_INPUTS, 0).describe(
    "Calls the model proposes to tell candidates apart when none passes (Python; 0: none)",
  ),
  /** Candidates of one run in the sandbox at the same time; the model calls are not limited by it. */
  sandboxConcurrency: boundedInteger("sandboxConcurrency", 1, MAX_SANDBOX_CONCURRENCY, 4).describe(
    "Candidates of one run in the sandbox at the same time",
  ),
  /** Total tokens (input + output, all models) the run may spend. */
  tokenBudget: z
    .number({ error: "tokenBudget must be a number" })
    .int("tokenBudget must be a whole number")
    // No model call fits in 0 tokens: such a run could only end budget_exhausted before its first program.
    .min(1, "tokenBudget must be at least 1")
    .default(SETTING_DEFAULTS.tokenBudget)
    .describe("Total tokens the run may spend on model calls"),
  /** How many times in a row one error may repeat before a fresh rewrite, then `stuck`. */
  repeatLimit: z
    .number()
    .int()
    .min(1, "repeatLimit must be at least 1")
    .default(2)
    .describe("Times in a row one error may repeat before a fresh rewrite, then stuck"),
  /** Wall-clock limit for one execution of the program and its tests. */
  timeoutMs: limitSetting("timeoutMs").describe("Wall-clock limit per execution, in milliseconds"),
  /**
   * Memory of one execution in MiB: for the whole run where the sandbox has a cgroup (bwrap as root,
   * container), else per process (`selfheal doctor` says which). Past it the run ends `memory_limit`.
   */
  memoryMb: limitSetting("memoryMb").describe("Memory per execution, MiB"),
  /** CPU seconds of one execution, for the whole run or per process as the sandbox can; then `timeout`. */
  cpuSeconds: limitSetting("cpuSeconds").describe("CPU seconds per execution"),
  /** Processes and threads one execution may have at once. */
  maxProcesses: limitSetting("maxProcesses").describe("Processes per execution"),
  /** The largest file one execution may write, in MiB. */
  maxFileMb: limitSetting("maxFileMb").describe("Largest file an execution may write, MiB"),
  /** MiB one execution may write to /work and /tmp together (a tmpfs of its own where the sandbox can mount one). */
  maxDiskMb: limitSetting("maxDiskMb").describe("Disk per execution (work dir and /tmp together), MiB"),
  /** Bytes of stdout, and of stderr, kept of one execution; past it the run ends `output_limit`. */
  maxOutputBytes: limitSetting("maxOutputBytes").describe("Bytes of stdout and of stderr kept per execution"),
  /**
   * How long one model request may wait for an answer before it fails (and is retried, for models
   * built from the environment); an injected model without a timeout of its own gets it per call.
   */
  modelTimeoutMs: z
    .number({ error: "modelTimeoutMs must be a number" })
    .int("modelTimeoutMs must be a whole number of milliseconds")
    .min(MIN_MODEL_TIMEOUT_MS, `modelTimeoutMs must be at least ${MIN_MODEL_TIMEOUT_MS}`)
    .max(MAX_MODEL_TIMEOUT_MS, `modelTimeoutMs must be at most ${MAX_MODEL_TIMEOUT_MS} (an hour)`)
    .default(() => modelTimeoutFromEnv())
    .describe("Time limit per model call, in milliseconds"),
  /** Model name for the generator (and every role without its own name). */
  model: z
    .string()
    .min(1, "model must not be empty")
    .default(() => defaultModelName())
    .describe("Model name for the generator (and for the fixer and critic unless they are named)"),
  /** Model name for the fixer; defaults to `model`. */
  fixerModel: z.string().min(1).nullable().default(null).describe("Model name for the fixer; empty: the model"),
  /** Model for hard failures (assertions, wrong output); defaults to the fixer's. */
  strongFixerModel: z
    .string()
    .min(1)
    .nullable()
    .default(null)
    .describe("Model name the fixer switches to when the same error repeats; empty: never switch"),
  /** Model name for the LLM review; defaults to `model`. */
  criticModel: z.string().min(1).nullable().default(null).describe("Model name for the LLM review; empty: the model"),
  temperature: z
    .number()
    .min(0, "temperature must be between 0 and 2")
    .max(2, "temperature must be between 0 and 2")
    .default(SETTING_DEFAULTS.temperature)
    .describe("Sampling temperature of the model calls"),
  /** Ask the critic model to review runs that have no tests and exited cleanly. */
  llmReview: z
    .boolean()
    .default(false)
    .describe("Without tests, a clean run passes only when the critic model approves it"),
  /** Upper bound on one model reply; it shrinks further as the budget runs out. */
  maxOutputTokens: z.number().int().min(64).default(2048).describe("Output cap per model call, in tokens"),
  /** Pause before each execution for a person to approve, reject or edit the program. */
  approval: z
    .boolean()
    .default(false)
    .describe("Pause before each execution for a person to approve, reject or edit the program"),
  /** Bytes all input files of a run may hold together; more is refused before any model call. */
  maxInputBytes: z
    .number()
    .int()
    .min(0, "maxInputBytes must not be negative")
    .default(16 * 1024 * 1024)
    .describe("Bytes the input files of a run may hold together"),
  /** Files one run may leave under `out/`; the rest are not collected, and the attempt fails. */
  maxArtifacts: z
    .number()
    .int()
    .min(0, "maxArtifacts must not be negative")
    .default(32)
    .describe("Files one execution may leave under out/"),
  /** Bytes the artifacts of one run may hold together; a file past it is not collected, and the attempt fails. */
  maxArtifactBytes: z
    .number()
    .int()
    .min(0, "maxArtifactBytes must not be negative")
    .default(32 * 1024 * 1024)
    .describe("Bytes the artifacts of one execution may hold together"),
  /**
   * Where artifacts are kept, as `<dir>/<thread>/attempt-<n>/out/...`; the CLI uses the run
   * store's folder (`.selfheal/artifacts`). Null: the state lists them, their bytes are not kept.
   */
  artifactsDir: z
    .string()
    .min(1)
    .nullable()
    .default(null)
    .describe("Folder where kept artifacts are stored; empty: listed, not kept"),
  /**
   * The Python that runs programs: a path, or a command looked up on PATH. Null: `$SELFHEAL_PYTHON`,
   * else python3 on PATH. The bwrap and gVisor sandboxes mount its installation read-only; the
   * container backend runs its image's own.
   */
  python: z
    .string()
    .trim()
    .min(1, "python must name an interpreter")
    .nullable()
    .default(null)
    .describe("The Python that runs programs (path or command); empty: $SELFHEAL_PYTHON, else python3"),
  /**
   * Show the fixer the values a failed run computed: a failed assert's operands, the locals of the
   * innermost frames, bounded and masked (see "Runtime values" in the README).
   */
  runtimeValues: z
    .boolean()
    .default(true)
    .describe("Show the fixer the values a failed run computed (operands, locals)"),
  /**
   * Also record the calls the tests make of the program's functions, with arguments and results
   * (Python). Off by default: `npm run bench:values` measured it at about 10% of a passing run.
   */
  traceCalls: z
    .boolean()
    .default(false)
    .describe("Also record the calls the tests make of the functions of the program (Python)"),
  /** Sandbox backend: bwrap when usable, else a plain subprocess. */
  sandbox: SandboxKindSchema.default(SETTING_DEFAULTS.sandbox).describe(
    "Sandbox backend: auto (bwrap when usable, else process), bwrap, process, container, gvisor",
  ),
  /**
   * Where the acceptance tests run: `process`, in a process of their own that the program cannot
   * read, trace or change, comparing what the program returns as plain data (a pass the program
   * cannot forge); `shared`, appended to the program in its process, as HumanEval runs them.
   */
  testIsolation: TestIsolationSchema.default("process").describe(
    "Where the tests run: process (their own, a pass the program cannot forge) or shared",
  ),
  /**
   * Interpreters the local sandboxes (bwrap, process) keep started ahead of need, per language;
   * each one a run takes is replaced at once. More than 1 serves rounds of candidates and runs that
   * come faster than an interpreter starts; each waiting one holds ~10 MiB and a work dir.
   */
  sandboxPoolSize: boundedInteger(
    "sandboxPoolSize",
    SANDBOX_POOL_SIZE.min,
    SANDBOX_POOL_SIZE.max,
    SANDBOX_POOL_SIZE.default,
  ).describe("Interpreters kept started ahead of need, per language"),
  /**
   * How long a run waits for its run store when the database goes away mid-run (a restart, a
   * failover, a network blip, a SQLite file locked or on a full disk), retrying with backoff; past
   * it the run stops at its last saved checkpoint, to be resumed. 0: stop at the first failure.
   */
  storeWaitSeconds: boundedInteger("storeWaitSeconds", 0, MAX_STORE_WAIT_SECONDS, DEFAULT_STORE_WAIT_SECONDS).describe(
    "Seconds a run waits for its database to come back before it stops",
  ),
  /** Packages the program may import beyond the standard library, installed on first need. */
  packages: PackagesSchema.default(() => ({ python: [], javascript: [] })).describe(
    "Packages programs may import, installed on first need, by language",
  ),
  packageInstall: PackageInstallSchema.default(() => PackageInstallSchema.parse({})).describe(
    "How packages are installed: index, timeouts, cache",
  ),
});

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
  return { timeoutMs, memoryMb, cpuSeconds, maxProcesses, maxFileMb, maxDiskMb, maxOutputBytes };
}
