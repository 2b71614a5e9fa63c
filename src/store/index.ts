// `selfheal/store`: where runs live. Its own entry because it loads the SQLite and PostgreSQL
// drivers (better-sqlite3 is a native addon), which `import "selfheal"` must not pay for.
import type { StoreLocation } from "./location.js";
import type { RunIndex, RunStore } from "./run-store.js";

export { ThreadBusyError } from "../core/errors.js";
export { forkCheckpoint } from "./fork.js";
export {
  artifactsFolder,
  DEFAULT_SQLITE_PATH,
  describeLocation,
  resolveStoreLocation,
  type StoreLocation,
  storeExists,
} from "./location.js";
export {
  describeOutage,
  describeStoreWait,
  isPostgresOutage,
  isSqliteOutage,
  type StoreWaitEvent,
  type StoreWaitListener,
} from "./outage.js";
export type { RunIndex, RunRecord, RunStore, ThreadHead, ThreadLease } from "./run-store.js";

/** Opens (and on first use creates) the run store; call `close()` when done. */
export async function openRunStore(location: StoreLocation): Promise<RunStore> {
  // Each driver loads when its store is opened: a command on SQLite never loads pg, and the reverse.
  if (location.kind === "sqlite") return (await import("./sqlite.js")).openSqliteStore(location);
  return (await import("./postgres.js")).openPostgresStore(location);
}

/**
 * Opens what a listing of the store reads: on SQLite the file alone, without LangGraph's saver
 * (see sqlite-file.ts); elsewhere the store itself. Call `close()` when done.
 */
export async function openRunIndex(location: StoreLocation): Promise<RunIndex> {
  if (location.kind === "sqlite") {
    return (await import("./sqlite-file.js")).openSqliteIndex(location, () => openRunStore(location));
  }
  return (await import("./run-index.js")).indexOfStore(await openRunStore(location));
}

/**
 * Runs `use` while this process holds the thread's lease, so two processes never advance one run
 * at once, and always lets it go. With `waitSeconds`, taking the lease waits for a database that
 * is away, as a run's checkpoints do; a live holder elsewhere is a ThreadBusyError either way.
 */
export async function withThreadLease<T>(
  store: RunStore,
  threadId: string,
  use: () => Promise<T>,
  options: { waitSeconds?: number } = {},
): Promise<T> {
  const take = () => store.lease(threadId);
  const lease =
    options.waitSeconds === undefined
      ? await take()
      : await store.patiently("taking the thread", take, options.waitSeconds);
  try {
    return await use();
  } finally {
    await lease.release();
  }
}
