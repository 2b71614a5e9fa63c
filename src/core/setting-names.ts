import { InvalidSettingsError } from "./errors.js";

/**
 * The run settings' choices and the defaults read from the environment, with no schema behind
 * them: the setting table (setting-table.ts) takes them from here.
 */

/** Languages a sandbox can run. Python is the default everywhere. */
export const LANGUAGES = ["python", "javascript"] as const;

/** Which backend to use; `auto` picks bwrap when it works here, else the plain process. */
export const SANDBOX_KINDS = ["auto", "bwrap", "process", "container", "gvisor"] as const;
export type SandboxKind = (typeof SANDBOX_KINDS)[number];

/**
 * How acceptance tests are joined to the program: `process`, in a process of their own that the
 * program cannot reach (the default; see docs/security.md), or `shared`, appended to the program and
 * run in its process as HumanEval does.
 */
export const TEST_ISOLATIONS = ["process", "shared"] as const;

/** What follows a round in which no candidate passed. */
export const STRATEGIES = ["repair", "resample", "mixed"] as const;
export type Strategy = (typeof STRATEGIES)[number];

export const DEFAULT_MODEL_TIMEOUT_MS = 120_000;
export const MIN_MODEL_TIMEOUT_MS = 100;
export const MAX_MODEL_TIMEOUT_MS = 3_600_000;

/**
 * The default per-request model timeout, from `SELFHEAL_MODEL_TIMEOUT_MS`; a bad value is a
 * configuration error, not a silent default.
 */
export function modelTimeoutFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.SELFHEAL_MODEL_TIMEOUT_MS?.trim();
  if (raw === undefined || raw === "") return DEFAULT_MODEL_TIMEOUT_MS;
  const ms = Number(raw);
  if (!Number.isInteger(ms) || ms < MIN_MODEL_TIMEOUT_MS || ms > MAX_MODEL_TIMEOUT_MS) {
    throw new InvalidSettingsError(
      `SELFHEAL_MODEL_TIMEOUT_MS must be a whole number of milliseconds from ${MIN_MODEL_TIMEOUT_MS} to ${MAX_MODEL_TIMEOUT_MS}, got "${raw}"`,
    );
  }
  return ms;
}

export const defaultModelName = (env: NodeJS.ProcessEnv = process.env): string => env.SELFHEAL_MODEL ?? "gpt-4o-mini";

export const DEFAULT_STORE_WAIT_SECONDS = 180;
