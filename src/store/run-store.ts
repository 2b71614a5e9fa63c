import type { BaseCheckpointSaver } from "@langchain/langgraph";
import { InvalidSettingsError, messageOf } from "../core/errors.js";
import { parseSettings, type Settings } from "../core/settings.js";
import type { StoreLocation } from "./location.js";
import type { StoreWaitListener } from "./outage.js";

/** What the CLI remembers about a run beyond its checkpoints: LangGraph does not store `context`. */
export interface RunRecord {
  threadId: string;
  task: string;
  /** The settings the run was started (or forked) with; `resume` runs with them again. */
  settings: Settings;
  createdAt: string;
  /** Set on a thread made by time travel: the run and checkpoint it was copied from. */
  forkedFrom?: { threadId: string; checkpointId: string };
  /**
   * Only in `listRuns`: why this row's stored settings cannot be read (a row written by a version
   * that checked less); `settings` are then the defaults, and `getRun` of the thread fails with this.
   */
  unreadable?: string;
}

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
  /**
   * Calls `listener` when a checkpoint read or write starts waiting for the database, and when it
   * gets through again (see `storeWaitSeconds`); returns the function that stops it.
   */
  onWait(listener: StoreWaitListener): () => void;
  /**
   * Runs `attempt` (a read or a lease of this store) the way a run's checkpoints are written: while
   * the database is away it is tried again with backoff, for up to `boundSeconds`.
   */
  patiently<T>(operation: string, attempt: () => Promise<T>, boundSeconds: number): Promise<T>;
  close(): Promise<void>;
}

/**
 * A thread's last checkpoint as a listing reads it: its state's plain values and when it was
 * written, or `unread` where only the checkpointer can read it.
 */
export interface ThreadHead {
  threadId: string;
  values?: Record<string, unknown>;
  createdAt?: string;
  /** The run is paused at an interrupt (an approval) at this checkpoint. */
  interrupted: boolean;
  unread?: boolean;
}

/**
 * What a listing of runs reads, without the checkpointer where the store allows: SQLite's is read
 * with the driver alone, so `selfheal runs` does not load LangGraph. `openStore` gives the
 * whole store, for a thread only the graph can describe; `close` closes it too.
 */
export interface RunIndex {
  location: StoreLocation;
  listRuns(): Promise<RunRecord[]>;
  /** Every thread that has checkpoints, each at its last one. */
  listHeads(): Promise<ThreadHead[]>;
  openStore(): Promise<RunStore>;
  close(): Promise<void>;
}

export interface RunRow {
  thread_id: string;
  task: string;
  settings: string | Record<string, unknown>;
  created_at: string | Date;
  forked_from_thread: string | null;
  forked_from_checkpoint: string | null;
}

/** One thread's record; throws InvalidSettingsError, naming the thread, when its settings cannot be read. */
export function recordFromRow(row: RunRow): RunRecord {
  const record = listedRecord(row);
  if (record.unreadable) throw new InvalidSettingsError(`thread ${row.thread_id}: ${record.unreadable}`);
  return record;
}

/** A row of a listing: one that cannot be read says so in `unreadable`, and the listing goes on. */
export function listedRecord(row: RunRow): RunRecord {
  const base = {
    threadId: row.thread_id,
    task: row.task,
    createdAt: row.created_at instanceof Date ? row.created_at.toISOString() : row.created_at,
    ...(row.forked_from_thread && row.forked_from_checkpoint
      ? { forkedFrom: { threadId: row.forked_from_thread, checkpointId: row.forked_from_checkpoint } }
      : {}),
  };
  try {
    const settings = typeof row.settings === "string" ? JSON.parse(row.settings) : row.settings;
    // Re-validated on the way out: a run stored by an older version gets today's defaults for new fields.
    return { ...base, settings: parseSettings(settings) };
  } catch (error) {
    return {
      ...base,
      settings: parseSettings({}),
      unreadable: `its stored settings cannot be read: ${messageOf(error)}`,
    };
  }
}

export function rowValues(record: RunRecord): [string, string, string, string, string | null, string | null] {
  return [
    record.threadId,
    record.task,
    JSON.stringify(record.settings),
    record.createdAt,
    record.forkedFrom?.threadId ?? null,
    record.forkedFrom?.checkpointId ?? null,
  ];
}
