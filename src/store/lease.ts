import { hostname } from "node:os";
import type Database from "better-sqlite3";
import type pg from "pg";
import { ThreadBusyError } from "../core/errors.js";
import { processIsAlive } from "../core/process.js";
import type { ThreadLease } from "./run-store.js";

/** Leases kept in the SQLite file itself, in the `selfheal_leases` table the store creates. */
export function sqliteLeases(db: Database.Database): { lease(threadId: string): Promise<ThreadLease> } {
  const host = hostname();
  // A lease row whose process is gone (kill -9, power cut) is stale and may be taken over. A
  // process on another host cannot be checked from here, so its lease stands until it releases it.
  const claim = db.transaction((threadId: string) => {
    const holder = db.prepare("SELECT pid, host FROM selfheal_leases WHERE thread_id = ?").get(threadId) as
      | { pid: number; host: string }
      | undefined;
    if (holder && holder.pid !== process.pid && (holder.host !== host || processIsAlive(holder.pid))) {
      throw new ThreadBusyError(
        `thread ${threadId} is being run by another process (pid ${holder.pid} on ${holder.host})`,
      );
    }
    db.prepare("INSERT OR REPLACE INTO selfheal_leases (thread_id, pid, host, acquired_at) VALUES (?, ?, ?, ?)").run(
      threadId,
      process.pid,
      host,
      new Date().toISOString(),
    );
  });

  return {
    async lease(threadId) {
      claim.immediate(threadId);
      return {
        async release() {
          db.prepare("DELETE FROM selfheal_leases WHERE thread_id = ? AND pid = ?").run(threadId, process.pid);
        },
      };
    },
  };
}

export async function postgresLease(pool: pg.Pool, threadId: string): Promise<ThreadLease> {
  // A session-level advisory lock lives exactly as long as this connection: a worker that is
  // killed drops its connection, and PostgreSQL frees the thread for the next worker at once.
  const client = await pool.connect();
  const { rows } = await client.query<{ locked: boolean }>(
    "SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked",
    [`selfheal:thread:${threadId}`],
  );
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
}
