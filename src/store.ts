// `selfheal/store`: where runs live. Its own entry because it loads the SQLite and PostgreSQL
// drivers (better-sqlite3 is a native addon), which `import "selfheal"` must not pay for.
export {
  openRunStore,
  storeExists,
  forkCheckpoint,
  resolveStoreLocation,
  describeLocation,
  DEFAULT_SQLITE_PATH,
  ThreadBusyError,
  type RunStore,
  type RunRecord,
  type StoreLocation,
  type ThreadLease,
} from "./tools/checkpointer.js";
