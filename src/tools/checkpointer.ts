import { existsSync, mkdirSync, statSync } from "node:fs";
import { hostname } from "node:os";
import { dirname, join, resolve } from "node:path";
import type { BaseCheckpointSaver } from "@langchain/langgraph";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import Database from "better-sqlite3";
import pg from "pg";
import { InvalidSettingsError, StoreConnectionError, ThreadBusyError } from "../errors.js";
import { parseSettings, type Settings } from "../graph/context.js";

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

function isDirectory(path: string): boolean {
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

/** What the CLI remembers about a run beyond its checkpoints: LangGraph does not store `context`. */
export interface RunRecord {
  threadId: string;
  task: string;
  /** The settings the run was started (or forked) with; `resume` runs with them again. */
  settings: Settings;
  createdAt: string;
  /** Set on a thread made by time travel: the run and checkpoint it was copied from. */
  forkedFrom?: { threadId: string; checkpointId: string };
}

export { ThreadBusyError };

/** Held while a process runs a thread; released on `release()` or when the process dies. */
export interface ThreadLease {
  release(): Promise<void>;
}

export interface RunStore {
  location: StoreLocation;
  checkpointer: BaseCheckpointSaver;
  saveRun(record: RunRecord): Promise<void>;
  getRun(threadId: string): Promise<RunRecord | undefined>;
  listRuns(): Promise<RunRecord[]>;
  /** Claims the thread for this process; throws ThreadBusyError when a live process has it. */
  lease(threadId: string): Promise<ThreadLease>;
  close(): Promise<void>;
}

interface RunRow {
  thread_id: string;
  task: string;
  settings: string | Record<string, unknown>;
  created_at: string | Date;
  forked_from_thread: string | null;
  forked_from_checkpoint: string | null;
}

function recordFromRow(row: RunRow): RunRecord {
  const settings = typeof row.settings === "string" ? JSON.parse(row.settings) : row.settings;
  return {
    threadId: row.thread_id,
    task: row.task,
    // Re-validated on the way out: a run stored by an older version gets today's defaults for new fields.
    settings: parseSettings(settings),
    createdAt: row.created_at instanceof Date ? row.created_at.toISOString() : row.created_at,
    ...(row.forked_from_thread && row.forked_from_checkpoint
      ? { forkedFrom: { threadId: row.forked_from_thread, checkpointId: row.forked_from_checkpoint } }
      : {}),
  };
}

function rowValues(record: RunRecord): [string, string, string, string, string | null, string | null] {
  return [
    record.threadId,
    record.task,
    JSON.stringify(record.settings),
    record.createdAt,
    record.forkedFrom?.threadId ?? null,
    record.forkedFrom?.checkpointId ?? null,
  ];
}

function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

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

function openSqliteFile(path: string): Database.Database {
  const unusable = (problem: string, cause?: unknown) =>
    new StoreConnectionError(`cannot open the SQLite run store at ${path}: ${problem}; give --db a file path in a writable directory`, { cause });
  if (isDirectory(path)) throw unusable(`it is a directory (${join(path, "checkpoints.db")} would do)`);
  try {
    makeDirectories(dirname(path));
  } catch (error) {
    throw unusable(`cannot create the directory ${(error as NodeJS.ErrnoException).path ?? dirname(path)}`, error);
  }
  try {
    // Several CLI processes may share the file: WAL lets readers run beside the one writer, and the
    // busy timeout makes a writer wait for another instead of failing.
    const db = new Database(path, { timeout: 10_000 });
    db.pragma("journal_mode = WAL");
    return db;
  } catch (error) {
    // SQLite says only "unable to open database file" for a read-only, virtual (/proc, /sys) or missing place.
    const cantOpen = (error as { code?: string }).code === "SQLITE_CANTOPEN";
    throw unusable(cantOpen ? "no database file can be created or opened there" : error instanceof Error ? error.message : String(error), error);
  }
}

function openSqliteStore(location: Extract<StoreLocation, { kind: "sqlite" }>): RunStore {
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
  const checkpointer = new SqliteSaver(db);
  const host = hostname();

  // A lease row whose process is gone (kill -9, power cut) is stale and may be taken over. A
  // process on another host cannot be checked from here, so its lease stands until it releases it.
  const claim = db.transaction((threadId: string) => {
    const holder = db.prepare("SELECT pid, host FROM selfheal_leases WHERE thread_id = ?").get(threadId) as
      | { pid: number; host: string }
      | undefined;
    if (holder && holder.pid !== process.pid && (holder.host !== host || processIsAlive(holder.pid))) {
      throw new ThreadBusyError(`thread ${threadId} is being run by another process (pid ${holder.pid} on ${holder.host})`);
    }
    db.prepare("INSERT OR REPLACE INTO selfheal_leases (thread_id, pid, host, acquired_at) VALUES (?, ?, ?, ?)").run(
      threadId,
      process.pid,
      host,
      new Date().toISOString(),
    );
  });

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
      return (db.prepare("SELECT * FROM selfheal_runs ORDER BY created_at DESC").all() as RunRow[]).map(recordFromRow);
    },
    async lease(threadId) {
      claim.immediate(threadId);
      return {
        async release() {
          db.prepare("DELETE FROM selfheal_leases WHERE thread_id = ? AND pid = ?").run(threadId, process.pid);
        },
      };
    },
    async close() {
      db.close();
    },
  };
}

/** Any fixed number: it only keeps two workers from running the schema setup at the same time. */
const SETUP_LOCK_KEY = 4_242_001;

async function openPostgresStore(location: Extract<StoreLocation, { kind: "postgres" }>): Promise<RunStore> {
  const pool = new pg.Pool({ connectionString: location.url, max: 4, application_name: `selfheal ${process.pid}@${hostname()}` });
  // An idle client that loses its server would otherwise raise an unhandled 'error' event.
  pool.on("error", () => undefined);
  const checkpointer = new PostgresSaver(pool);
  const setupClient = await pool.connect().catch((error: Error) => {
    void pool.end();
    throw new StoreConnectionError(`cannot connect to PostgreSQL at ${describeLocation(location)}: ${error.message}`, { cause: error });
  });
  try {
    await setupClient.query("SELECT pg_advisory_lock($1)", [SETUP_LOCK_KEY]);
    await checkpointer.setup();
    await setupClient.query(`
      CREATE TABLE IF NOT EXISTS selfheal_runs (
        thread_id TEXT PRIMARY KEY,
        task TEXT NOT NULL,
        settings JSONB NOT NULL,
        created_at TEXT NOT NULL,
        forked_from_thread TEXT,
        forked_from_checkpoint TEXT
      )`);
  } catch (error) {
    setupClient.release();
    await pool.end();
    throw error;
  }
  await setupClient.query("SELECT pg_advisory_unlock($1)", [SETUP_LOCK_KEY]);
  setupClient.release();

  return {
    location,
    checkpointer,
    async saveRun(record) {
      await pool.query(
        `INSERT INTO selfheal_runs (thread_id, task, settings, created_at, forked_from_thread, forked_from_checkpoint)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (thread_id) DO UPDATE SET task = $2, settings = $3, forked_from_thread = $5, forked_from_checkpoint = $6`,
        rowValues(record),
      );
    },
    async getRun(threadId) {
      const { rows } = await pool.query<RunRow>("SELECT * FROM selfheal_runs WHERE thread_id = $1", [threadId]);
      return rows[0] ? recordFromRow(rows[0]) : undefined;
    },
    async listRuns() {
      const { rows } = await pool.query<RunRow>("SELECT * FROM selfheal_runs ORDER BY created_at DESC");
      return rows.map(recordFromRow);
    },
    async lease(threadId) {
      // A session-level advisory lock lives exactly as long as this connection: a worker that is
      // killed drops its connection, and PostgreSQL frees the thread for the next worker at once.
      const client = await pool.connect();
      const { rows } = await client.query<{ locked: boolean }>("SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked", [
        `selfheal:thread:${threadId}`,
      ]);
      if (!rows[0]?.locked) {
        client.release();
        throw new ThreadBusyError(`thread ${threadId} is being run by another worker right now`);
      }
      return {
        async release() {
          try {
            await client.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [`selfheal:thread:${threadId}`]);
            client.release();
          } catch (error) {
            // The connection is already gone, and the lock with it: discard the client and carry on,
            // so a failed unlock never hides the run's own result.
            client.release(error instanceof Error ? error : true);
          }
        },
      };
    },
    async close() {
      await pool.end();
    },
  };
}

/**
 * Whether the store holds anything yet: a SQLite file that does not exist has no runs, and
 * commands that only read check this so that they create no database. PostgreSQL always counts.
 */
export function storeExists(location: StoreLocation): boolean {
  return location.kind === "postgres" || existsSync(location.path);
}

/** Opens (and on first use creates) the run store; call `close()` when done. */
export async function openRunStore(location: StoreLocation): Promise<RunStore> {
  return location.kind === "sqlite" ? openSqliteStore(location) : openPostgresStore(location);
}

/**
 * Time travel into a new thread: copies one checkpoint, with every channel's value, as the first
 * checkpoint of `targetThreadId`. Running that thread continues from there while the source
 * thread keeps its history and its head untouched. Pending writes are not copied, so the step
 * that was pending at that checkpoint runs afresh (an approval is asked again).
 */
export async function forkCheckpoint(
  checkpointer: BaseCheckpointSaver,
  source: { threadId: string; checkpointId: string },
  targetThreadId: string,
): Promise<void> {
  const tuple = await checkpointer.getTuple({
    configurable: { thread_id: source.threadId, checkpoint_ns: "", checkpoint_id: source.checkpointId },
  });
  if (!tuple) throw new InvalidSettingsError(`thread ${source.threadId} has no checkpoint ${source.checkpointId}`);
  const metadata = { ...(tuple.metadata ?? { step: -1, parents: {} }), source: "fork" as const };
  await checkpointer.put(
    { configurable: { thread_id: targetThreadId, checkpoint_ns: "" } },
    tuple.checkpoint,
    metadata,
    // Every channel counts as new, so a saver that stores values per version (PostgreSQL) writes them all.
    tuple.checkpoint.channel_versions,
  );
}
