import { existsSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { InvalidSettingsError } from "../core/errors.js";

/** Where runs are stored: one SQLite file for one machine, or PostgreSQL shared by many workers. */
export type StoreLocation = { kind: "sqlite"; path: string } | { kind: "postgres"; url: string };

export const DEFAULT_SQLITE_PATH = ".selfheal/checkpoints.db";

/** The folder `DEFAULT_SQLITE_PATH` lives in, looked for the way git looks for `.git`. */
const STORE_DIR_NAME = ".selfheal";

/**
 * The nearest folder, from `cwd` up to the root, that holds a `.selfheal/` directory, so the runs
 * of a project are found from any of its subfolders; undefined when there is none.
 */
function findStoreRoot(cwd: string): string | undefined {
  for (let folder = resolve(cwd); ; folder = dirname(folder)) {
    if (isDirectory(join(folder, STORE_DIR_NAME))) return folder;
    if (dirname(folder) === folder) return undefined;
  }
}

export function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Flags win over the environment, and PostgreSQL over SQLite within each; giving both flags is a
 * mistake worth reporting rather than guessing which one was meant. With neither, the store is
 * `.selfheal/checkpoints.db` in the nearest folder up from `cwd` that has a `.selfheal/`, or in
 * `cwd` itself when none has (where a new run creates it).
 */
export function resolveStoreLocation(
  flags: { db?: string; postgres?: string },
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): StoreLocation {
  if (flags.db && flags.postgres) throw new InvalidSettingsError("give either --db or --postgres, not both");
  if (flags.postgres) return { kind: "postgres", url: flags.postgres };
  if (flags.db) return { kind: "sqlite", path: resolve(cwd, flags.db) };
  if (env.SELFHEAL_POSTGRES_URL) return { kind: "postgres", url: env.SELFHEAL_POSTGRES_URL };
  if (env.SELFHEAL_DB) return { kind: "sqlite", path: resolve(cwd, env.SELFHEAL_DB) };
  return { kind: "sqlite", path: resolve(findStoreRoot(cwd) ?? cwd, DEFAULT_SQLITE_PATH) };
}

/**
 * Where the artifacts of runs are kept: `artifacts/` beside the SQLite file (in `.selfheal/` by
 * default), or, for PostgreSQL, in the `.selfheal/` the SQLite store would use; files live on
 * this machine either way.
 */
export function artifactsFolder(location: StoreLocation, cwd: string = process.cwd()): string {
  const local = location.kind === "sqlite" ? location : resolveStoreLocation({}, {}, cwd);
  return join(dirname(local.kind === "sqlite" ? local.path : resolve(cwd, DEFAULT_SQLITE_PATH)), "artifacts");
}

/** For messages: the SQLite path, or the PostgreSQL URL without its password. */
export function describeLocation(location: StoreLocation): string {
  if (location.kind === "sqlite") return location.path;
  try {
    const url = new URL(location.url);
    if (url.password) url.password = "***";
    return url.toString();
  } catch {
    return "postgres (unparseable URL)";
  }
}

/**
 * Whether the store holds anything yet: a SQLite file that does not exist has no runs, and
 * commands that only read check this so that they create no database. PostgreSQL always counts.
 */
export function storeExists(location: StoreLocation): boolean {
  return location.kind === "postgres" || existsSync(location.path);
}
