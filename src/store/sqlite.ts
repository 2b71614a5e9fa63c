import { existsSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import Database from "better-sqlite3";
import { StoreConnectionError } from "../core/errors.js";
import { sqliteLeases } from "./lease.js";
import { isDirectory, type StoreLocation } from "./location.js";
import { isSqliteOutage, StoreWaits } from "./outage.js";
import { PatientCheckpointer } from "./patient-checkpointer.js";
import { listedRecord, type RunRow, type RunStore, recordFromRow, rowValues } from "./run-store.js";

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

function openSqliteFile(path: string): Database.Database {
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

export function openSqliteStore(location: Extract<StoreLocation, { kind: "sqlite" }>): RunStore {
  const db = openSqliteFile(location.path);
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
  const waits = new StoreWaits();
  const checkpointer = new PatientCheckpointer(new SqliteSaver(db), {
    isOutage: isSqliteOutage,
    where: location.path,
    waits,
  });
  const leases = sqliteLeases(db);

  return {
    location,
    checkpointer,
    async saveRun(record) {
      db.prepare(
        `INSERT OR REPLACE INTO selfheal_runs (thread_id, task, settings, created_at, forked_from_thread, forked_from_checkpoint)
         VALUES (?, ?, ?, ?, ?, ?)`,
      ).run(...rowValues(record));
    },
    async getRun(threadId) {
      const row = db.prepare("SELECT * FROM selfheal_runs WHERE thread_id = ?").get(threadId) as RunRow | undefined;
      return row ? recordFromRow(row) : undefined;
    },
    async listRuns() {
      return (db.prepare("SELECT * FROM selfheal_runs ORDER BY created_at DESC").all() as RunRow[]).map(listedRecord);
    },
    lease: leases.lease,
    onWait: (listener) => waits.on(listener),
    patiently: checkpointer.patiently,
    async close() {
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
