import { DEFAULT_LIMITS, LIMIT_BOUNDS, SANDBOX_POOL_SIZE, type SandboxLimits } from "./limits.js";
import {
  DEFAULT_STORE_WAIT_SECONDS,
  defaultModelName,
  MAX_MODEL_TIMEOUT_MS,
  MIN_MODEL_TIMEOUT_MS,
  modelTimeoutFromEnv,
  SANDBOX_KINDS,
  STRATEGIES,
  TEST_ISOLATIONS,
} from "./setting-names.js";

/**
 * Every run setting, declared once with no schema behind it: its help, the kind of its value, its
 * default and its bounds. The settings schema (settings.ts) is built from this table, so Studio's
 * settings form and MCP's `solve` tool offer each setting with its default, bounds and help; the
 * CLI declares a flag for each from the same entry without loading zod, so `--help` and a usage
 * error stay fast. Adding a setting is one entry here.
 *
 * `flag`: the CLI flag, when its name is not the setting's in kebab case (`--timeout` for
 * `timeoutMs`), or `false` where a command declares its own (`--approve`, `--allow-package`) or
 * the CLI decides it (the artifacts folder is the run store's).
 * `serverOnly`: a setting an MCP client may not give, because it names a place on the server's
 * disk or network (a folder to write, a package index) or a resource every client shares.
 */
export interface SettingSpecBase {
  help: string;
  flag?: string | false;
  /** What the flag's value is called in its help (`--fixer-model <name>`); by kind when absent. */
  value?: string;
  serverOnly?: true;
}

/** A whole number within bounds (no `max`: no upper bound); a function default reads the environment. */
export interface IntegerSpec extends SettingSpecBase {
  kind: "integer";
  min: number;
  max?: number;
  default: number | (() => number);
}

export interface NumberSpec extends SettingSpecBase {
  kind: "number";
  min: number;
  max: number;
  default: number;
}

export interface BooleanSpec extends SettingSpecBase {
  kind: "boolean";
  default: boolean;
}

export interface ChoiceSpec extends SettingSpecBase {
  kind: "choice";
  choices: readonly [string, ...string[]];
  default: string;
}

/** A text; a `null` default makes it optional (another setting or the environment decides). */
export interface TextSpec extends SettingSpecBase {
  kind: "text";
  default: string | null | (() => string);
  /** Leading and trailing spaces are dropped before the value is checked (a path typed by hand). */
  trim?: boolean;
  /** The message when the value is empty; default "<name> must not be empty". */
  emptyMessage?: string;
}

/** A group of fields with a schema of its own (settings.ts `GROUP_SCHEMAS`); no flag of its own. */
export interface GroupSpec extends SettingSpecBase {
  kind: "group";
  flag: false;
}

export type SettingSpec = IntegerSpec | NumberSpec | BooleanSpec | ChoiceSpec | TextSpec | GroupSpec;

export type SettingTable = Readonly<Record<string, SettingSpec>>;

/** The most attempts one run may take; the graph's recursion limit is derived from it (core/settings.ts). */
export const MAX_ATTEMPTS_LIMIT = 100;
/** The most candidates one round may write in parallel: each is a model call and a sandbox run at once. */
export const MAX_CANDIDATES = 16;
/** The most inputs the model may propose for telling candidates apart. */
export const MAX_PROPOSED_INPUTS = 10;
/** The most programs of one run in the sandbox at a time. */
export const MAX_SANDBOX_CONCURRENCY = 16;
/** A day: a run that waits longer for its database is better stopped and resumed. */
const MAX_STORE_WAIT_SECONDS = 86_400;

/** A sandbox limit as a setting: its default and bounds from core/limits.ts, the one place they live. */
function limit(name: keyof SandboxLimits, help: string, flag?: string) {
  const { min, max } = LIMIT_BOUNDS[name];
  return { kind: "integer", min, max, default: DEFAULT_LIMITS[name], help, ...(flag ? { flag } : {}) } as const;
}

export const SETTING_TABLE = {
  /**
   * Rounds before the run gives up as `failed`. A round is one program, or with `candidates` > 1
   * one fan-out of candidates written and run in parallel; a repair after it is a round too.
   */
  maxAttempts: {
    kind: "integer",
    min: 1,
    max: MAX_ATTEMPTS_LIMIT,
    default: 4,
    help: "Rounds (a program, or a round of candidates) before the run gives up",
  },
  /** Programs written and run in parallel in the first round (and every round, with `resample` or `mixed`). */
  candidates: {
    kind: "integer",
    min: 1,
    max: MAX_CANDIDATES,
    default: 1,
    help: "Programs written and run in parallel in a round; a pass by any ends the run",
  },
  /**
   * What a failed round of candidates leads to (with `candidates` 1 and `repair`, the loop as it
   * always was): `repair` mends the chosen program, one program a round; `resample` writes
   * `candidates` fresh programs every round and never repairs; `mixed` writes, every round after
   * the first, one repair of the chosen program beside `candidates - 1` fresh ones.
   */
  strategy: {
    kind: "choice",
    choices: STRATEGIES,
    default: "repair",
    help: "What follows a round in which no candidate passed",
  },
  /**
   * Calls the model proposes once per run (in the first round of candidates, beside them) to tell
   * candidates apart when none passes: each is run on them, and those that agree form a group.
   * 0 (the default, as it costs a call per run): the tests' calls (or the output) alone.
   */
  proposedInputs: {
    kind: "integer",
    min: 0,
    max: MAX_PROPOSED_INPUTS,
    default: 0,
    help: "Calls the model proposes to tell candidates apart when none passes (Python; 0: none)",
  },
  /** Candidates of one run in the sandbox at the same time; the model calls are not limited by it. */
  sandboxConcurrency: {
    kind: "integer",
    min: 1,
    max: MAX_SANDBOX_CONCURRENCY,
    default: 4,
    help: "Candidates of one run in the sandbox at the same time",
  },
  // No model call fits in 0 tokens: such a run could only end budget_exhausted before its first program.
  tokenBudget: {
    kind: "integer",
    min: 1,
    default: 40_000,
    help: "Total tokens the run may spend on model calls",
  },
  repeatLimit: {
    kind: "integer",
    min: 1,
    default: 2,
    help: "Times in a row one error may repeat before a fresh rewrite, then stuck",
  },
  timeoutMs: limit("timeoutMs", "Wall-clock limit per execution, in milliseconds", "--timeout <ms>"),
  /**
   * For the whole run where the sandbox has a cgroup (bwrap as root, container), else per process
   * (`selfheal doctor` says which). Past it the run ends `memory_limit`.
   */
  memoryMb: limit("memoryMb", "Memory per execution, MiB"),
  cpuSeconds: limit("cpuSeconds", "CPU seconds per execution"),
  maxProcesses: limit("maxProcesses", "Processes per execution"),
  maxFileMb: limit("maxFileMb", "Largest file an execution may write, MiB"),
  /** A tmpfs of its own where the sandbox can mount one. */
  maxDiskMb: limit("maxDiskMb", "Disk per execution (work dir and /tmp together), MiB"),
  /** Past it the run ends `output_limit`. */
  maxOutputBytes: limit("maxOutputBytes", "Bytes of stdout and of stderr kept per execution"),
  /** With `allowHosts`: past it, the egress proxy refuses the run's new connections. */
  maxConnections: limit("maxConnections", "Connections per execution to the hosts of allowHosts"),
  /** With `allowHosts`: past it, the egress proxy cuts the run's connections and refuses new ones. */
  maxNetworkMb: limit("maxNetworkMb", "Data per execution to and from the hosts of allowHosts, MiB"),
  /**
   * How long one model request may wait before it fails (and is retried, for models built from the
   * environment); an injected model without a timeout of its own gets it per call.
   */
  modelTimeoutMs: {
    kind: "integer",
    min: MIN_MODEL_TIMEOUT_MS,
    max: MAX_MODEL_TIMEOUT_MS,
    default: () => modelTimeoutFromEnv(),
    help: "Time limit per model call, in milliseconds (default $SELFHEAL_MODEL_TIMEOUT_MS, else 120000)",
    flag: "--model-timeout <ms>",
  },
  model: {
    kind: "text",
    default: () => defaultModelName(),
    help: "Model name for the generator, and for the fixer and critic unless they are named (default $SELFHEAL_MODEL, else gpt-4o-mini)",
    flag: "-m, --model <name>",
  },
  fixerModel: { kind: "text", default: null, value: "name", help: "Model name for the fixer; empty: the model" },
  strongFixerModel: {
    kind: "text",
    default: null,
    value: "name",
    help: "Model name the fixer switches to when the same error repeats; empty: never switch",
  },
  criticModel: { kind: "text", default: null, value: "name", help: "Model name for the LLM review; empty: the model" },
  temperature: {
    kind: "number",
    min: 0,
    max: 2,
    default: 0.2,
    help: "Sampling temperature of the model calls",
  },
  /** Ask the critic model to review runs that have no tests and exited cleanly. */
  llmReview: {
    kind: "boolean",
    default: false,
    help: "Without tests, a clean run passes only when the critic model approves it",
  },
  /** It shrinks further as the budget runs out. */
  maxOutputTokens: { kind: "integer", min: 64, default: 2048, help: "Output cap per model call, in tokens" },
  // `selfheal run --approve`: a person at the terminal answers; a queued or resumed run has none.
  approval: {
    kind: "boolean",
    default: false,
    help: "Pause before each execution for a person to approve, reject or edit the program",
    flag: false,
  },
  /** More is refused before any model call. */
  maxInputBytes: {
    kind: "integer",
    min: 0,
    default: 16 * 1024 * 1024,
    help: "Bytes the input files of a run may hold together",
  },
  /** The rest are not collected, and the attempt fails. */
  maxArtifacts: { kind: "integer", min: 0, default: 32, help: "Files one execution may leave under out/" },
  /** A file past it is not collected, and the attempt fails. */
  maxArtifactBytes: {
    kind: "integer",
    min: 0,
    default: 32 * 1024 * 1024,
    help: "Bytes the artifacts of one execution may hold together",
  },
  /**
   * Where artifacts are kept, as `<dir>/<thread>/attempt-<n>/out/...`; the CLI uses the run store's
   * folder (`.selfheal/artifacts`). Null: the state lists them, their bytes are not kept.
   */
  artifactsDir: {
    kind: "text",
    default: null,
    help: "Folder where kept artifacts are stored; empty: listed, not kept",
    flag: false,
    serverOnly: true,
  },
  /**
   * A path, or a command looked up on PATH. The bwrap and gVisor sandboxes mount its installation
   * read-only; the container backend runs its image's own.
   */
  python: {
    kind: "text",
    default: null,
    trim: true,
    emptyMessage: "python must name an interpreter",
    help: "The Python that runs programs, a path or a command (default $SELFHEAL_PYTHON, else python3 on PATH; `selfheal doctor` lists those found)",
    value: "path",
  },
  /** A failed assert's operands, the locals of the innermost frames, bounded and masked (README, "Runtime values"). */
  runtimeValues: {
    kind: "boolean",
    default: true,
    help: "Show the fixer the values a failed run computed (operands, locals)",
  },
  /** Off by default: `npm run bench:values` measured it at about 10% of a passing run. */
  traceCalls: {
    kind: "boolean",
    default: false,
    help: "Also record the calls the tests make of the functions of the program (Python)",
  },
  sandbox: {
    kind: "choice",
    choices: SANDBOX_KINDS,
    default: "auto",
    help: "Sandbox backend; auto: bwrap when usable, else process",
    value: "kind",
  },
  /**
   * `process`: the tests run in a process of their own that the program cannot read, trace or
   * change, comparing what the program returns as plain data; `shared`: appended to the program in
   * its process, as HumanEval runs them (docs/security.md).
   */
  testIsolation: {
    kind: "choice",
    choices: TEST_ISOLATIONS,
    default: "process",
    help: "Where the tests run: process (their own, a pass the program cannot forge) or shared",
    value: "where",
  },
  /**
   * More than 1 serves rounds of candidates and runs that come faster than an interpreter starts;
   * each waiting one holds ~10 MiB and a work dir. Every client of one server shares the pool.
   */
  sandboxPoolSize: {
    kind: "integer",
    min: SANDBOX_POOL_SIZE.min,
    max: SANDBOX_POOL_SIZE.max,
    default: SANDBOX_POOL_SIZE.default,
    help: "Interpreters the bwrap and process sandboxes keep started ahead of need, per language",
    flag: "--sandbox-pool <n>",
    serverOnly: true,
  },
  /**
   * When the database goes away mid-run (a restart, a failover, a file locked or on a full disk)
   * the run retries with backoff; past it the run stops at its last checkpoint, to be resumed.
   */
  storeWaitSeconds: {
    kind: "integer",
    min: 0,
    max: MAX_STORE_WAIT_SECONDS,
    default: DEFAULT_STORE_WAIT_SECONDS,
    help: "Seconds a run waits for its database to come back before it stops (0: stop at once)",
    flag: "--store-wait <seconds>",
  },
  // `--allow-package`, per language (cli/flag-settings.ts).
  packages: { kind: "group", help: "Packages programs may import, installed on first need, by language", flag: false },
  // A package index or cache folder is the server's to choose: it decides what code is installed.
  packageInstall: {
    kind: "group",
    help: "How packages are installed: index, timeouts, cache",
    flag: false,
    serverOnly: true,
  },
  /**
   * Hosts the programs may reach through the egress proxy (`--allow-host`, cli/flag-settings.ts);
   * empty, they have no network. The server's to give: a client naming hosts (and headers read from
   * the server's environment) would open the server's network and secrets to its programs.
   */
  allowHosts: {
    kind: "group",
    help: "Hosts the programs may reach over HTTP(S), e.g. api.github.com or *.example.org:8443; empty: no network",
    flag: false,
    serverOnly: true,
  },
} as const satisfies SettingTable;

export type SettingKey = keyof typeof SETTING_TABLE;

/** A setting's default as the schema gives it; a function default reads the environment now. */
export function defaultOf(spec: SettingSpec): unknown {
  if (spec.kind === "group") return undefined;
  return typeof spec.default === "function" ? spec.default() : spec.default;
}

/** `maxOutputTokens` becomes `--max-output-tokens <n>`; a spec's own `flag` wins. Undefined: no flag. */
export function flagOf(key: string, spec: SettingSpec): string | undefined {
  if (spec.flag === false) return undefined;
  if (spec.flag) return spec.flag;
  const name = `--${key.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}`;
  if (spec.kind === "boolean") return spec.default ? `--no-${name.slice(2)}` : name;
  const value = spec.value ?? { choice: "name", text: "text" }[spec.kind as string] ?? "n";
  return `${name} <${value}>`;
}

/** Every setting's default, as the schema gives it (the model's two read the environment now). */
export function settingDefaults(): { [K in SettingKey]: DefaultOf<(typeof SETTING_TABLE)[K]> } {
  const defaults = Object.entries(SETTING_TABLE).map(([key, spec]) => [key, defaultOf(spec)]);
  return Object.fromEntries(defaults) as { [K in SettingKey]: DefaultOf<(typeof SETTING_TABLE)[K]> };
}

type DefaultOf<S> = S extends { default: () => infer R } ? R : S extends { default: infer D } ? D : undefined;
