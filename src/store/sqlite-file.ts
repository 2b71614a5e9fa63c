import { existsSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import Database from "better-sqlite3";
import { StoreConnectionError } from "../core/errors.js";
import { isDirectory, type StoreLocation } from "./location.js";
import {
  listedRecord,
  type RunIndex,
  type RunRecord,
  type RunRow,
  type RunStore,
  recordFromRow,
  rowValues,
  type ThreadHead,
} from "./run-store.js";

// The SQLite file and what selfheal keeps in it beside LangGraph's checkpoints, with no LangGraph
// behind it: a listing (`selfheal runs`) reads the runs and each thread's last checkpoint from
// here, without loading the saver, whose serializer loads all of @langchain/core.

/**
 * Creates the missing directories one level at a time. Node 20's `mkdirSync(..., { recursive: true })`
 * never returns for a path under /proc, where mkdir answers ENOENT although the parent exists.
 */
function makeDirectories(directory: string): void {
  const missing: string[] = [];
  for (let current = directory; !existsSync(current); current = dirname(current)) {
    missing.unshift(current);
    if (dirname(current) === current) break;
  }
  for (const each of missing) mkdirSync(each);
}

/** How long one SQLite statement waits for another process's write lock, blocking the process meanwhile. */
const SQLITE_BUSY_TIMEOUT_MS = 2_000;

export function openSqliteFile(path: string): Database.Database {
  const unusable = (problem: string, cause?: unknown) =>
    new StoreConnectionError(
      `cannot open the SQLite run store at ${path}: ${problem}; give --db a file path in a writable directory`,
      { cause },
    );
  if (isDirectory(path)) throw unusable(`it is a directory (${join(path, "checkpoints.db")} would do)`);
  try {
    makeDirectories(dirname(path));
  } catch (error) {
    throw unusable(`cannot create the directory ${(error as NodeJS.ErrnoException).path ?? dirname(path)}`, error);
  }
  try {
    // Several CLI processes may share the file: WAL lets readers run beside the one writer, and the
    // busy timeout makes a writer wait for another instead of failing. better-sqlite3 waits with
    // the process stopped (no progress, no Ctrl-C), so it is short: a run's checkpoints wait longer
    // for a lock held longer, without stopping the process (storeWaitSeconds).
    const db = new Database(path, { timeout: SQLITE_BUSY_TIMEOUT_MS });
    db.pragma("journal_mode = WAL");
    // In WAL mode NORMAL syncs at checkpoints of the log, not at every commit: a checkpoint write
    // costs about 0.2 ms instead of 5.5 (measured here, one fsync each). A crashed or killed process
    // loses nothing; only a power cut or an OS crash may drop the last few checkpoints, never
    // corrupting the file (SQLite's documented guarantee), and the run then resumes from an earlier one.
    db.pragma("synchronous = NORMAL");
    reusePreparedStatements(db);
    return db;
  } catch (error) {
    // SQLite says only "unable to open database file" for a read-only, virtual (/proc, /sys) or missing place.
    const cantOpen = (error as { code?: string }).code === "SQLITE_CANTOPEN";
    throw unusable(
      cantOpen
        ? "no database file can be created or opened there"
        : error instanceof Error
          ? error.message
          : String(error),
      error,
    );
  }
}

/** Opens the file and creates selfheal's own tables in it. */
export function openSqliteRunsFile(path: string): Database.Database {
  const db = openSqliteFile(path);
  db.exec(`
    CREATE TABLE IF NOT EXISTS selfheal_runs (
      thread_id TEXT PRIMARY KEY,
      task TEXT NOT NULL,
      settings TEXT NOT NULL,
      created_at TEXT NOT NULL,
      forked_from_thread TEXT,
      forked_from_checkpoint TEXT
    );
    CREATE TABLE IF NOT EXISTS selfheal_leases (
      thread_id TEXT PRIMARY KEY,
      pid INTEGER NOT NULL,
      host TEXT NOT NULL,
      acquired_at TEXT NOT NULL
    );`);
  return db;
}

/** The run records of a SQLite store. */
export function sqliteRecords(db: Database.Database): Pick<RunStore, "saveRun" | "getRun" | "listRuns"> {
  return {
    async saveRun(record: RunRecord) {
      db.prepare(
        `INSERT OR REPLACE INTO selfheal_runs (thread_id, task, settings, created_at, forked_from_thread, forked_from_checkpoint)
         VALUES (?, ?, ?, ?, ?, ?)`,
      ).run(...rowValues(record));
    },
    async getRun(threadId: string) {
      const row = db.prepare("SELECT * FROM selfheal_runs WHERE thread_id = ?").get(threadId) as RunRow | undefined;
      return row ? recordFromRow(row) : undefined;
    },
    async listRuns() {
      return (db.prepare("SELECT * FROM selfheal_runs ORDER BY created_at DESC").all() as RunRow[]).map(listedRecord);
    },
  };
}

/** LangGraph's JSON for a value that was `undefined`, which JSON itself cannot say. */
function isUndefinedMark(value: unknown): boolean {
  return (
    typeof value === "object" &&
    value !== null &&
    "lc" in value &&
    value.lc === 2 &&
    "type" in value &&
    value.type === "undefined"
  );
}

/**
 * Each thread's last checkpoint as SqliteSaver wrote it (the checkpoint's JSON in `checkpoints`,
 * pending writes in `writes`), read as plain values. A value LangGraph serialized as a class
 * (a message) stays its plain JSON, which a listing does not read; a checkpoint in another
 * format than JSON is left out, for the caller to read through the saver.
 */
export function sqliteHeads(db: Database.Database): ThreadHead[] {
  const tables = db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('checkpoints', 'writes')")
    .all();
  if (tables.length < 2) return [];
  const rows = db
    .prepare(
      `SELECT c.thread_id, c.checkpoint_id, c.type, c.checkpoint,
         EXISTS (SELECT 1 FROM writes w WHERE w.thread_id = c.thread_id AND w.checkpoint_ns = '' AND w.checkpoint_id = c.checkpoint_id AND w.channel = '__interrupt__') AS interrupted
       FROM checkpoints c
       WHERE c.checkpoint_ns = '' AND c.checkpoint_id = (
         SELECT MAX(checkpoint_id) FROM checkpoints l WHERE l.thread_id = c.thread_id AND l.checkpoint_ns = '')`,
    )
    .all() as Array<{ thread_id: string; type: string | null; checkpoint: Buffer; interrupted: number }>;
  return rows.map((row) => {
    if (row.type !== "json") return { threadId: row.thread_id, unread: true, interrupted: row.interrupted === 1 };
    const checkpoint = JSON.parse(row.checkpoint.toString("utf8"), (_key, value) =>
      isUndefinedMark(value) ? undefined : value,
    ) as { ts?: string; channel_values?: Record<string, unknown> };
    return {
      threadId: row.thread_id,
      values: checkpoint.channel_values ?? {},
      ...(checkpoint.ts ? { createdAt: checkpoint.ts } : {}),
      interrupted: row.interrupted === 1,
    };
  });
}

/** The read side of a SQLite store for a listing; `openStore` opens the whole store when a thread needs the graph. */
export function openSqliteIndex(
  location: Extract<StoreLocation, { kind: "sqlite" }>,
  openWholeStore: () => Promise<RunStore>,
): RunIndex {
  const db = openSqliteRunsFile(location.path);
  const { listRuns } = sqliteRecords(db);
  let store: RunStore | undefined;
  return {
    location,
    listRuns,
    listHeads: async () => sqliteHeads(db),
    async openStore() {
      store ??= await openWholeStore();
      return store;
    },
    async close() {
      await store?.close();
      db.close();
    },
  };
}

/** Different SQL texts kept compiled; the saver and the store use about a dozen. */
const PREPARED_STATEMENTS_KEPT = 64;

/**
 * LangGraph's SqliteSaver calls `prepare()` on every read and write, and better-sqlite3 compiles
 * the SQL each time (about 2.5 ms of an agent's attempt, profiled). A statement is reusable once
 * its `run`, `get` or `all` returns, and neither the saver nor the store iterates one lazily, so
 * the same text gets the same compiled statement.
 */
function reusePreparedStatements(db: Database.Database): void {
  const prepare = db.prepare.bind(db);
  const kept = new Map<string, Database.Statement>();
  db.prepare = ((sql: string) => {
    let statement = kept.get(sql);
    if (!statement) {
      statement = prepare(sql);
      if (kept.size >= PREPARED_STATEMENTS_KEPT) kept.delete(kept.keys().next().value as string);
      kept.set(sql, statement);
    }
    return statement;
  }) as Database.Database["prepare"];
}
