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

/**
 * Thread leases as session-level advisory locks: a lock lives exactly as long as its connection, so
 * a worker that is killed frees its threads at once. A database that restarts (or a connection cut
 * on the way) frees them too: `confirm` takes such a lease again before the run writes anything
 * more, and throws ThreadBusyError when another process took the thread in between.
 */
export function postgresLeases(pool: pg.Pool): {
  lease(threadId: string): Promise<ThreadLease>;
  confirm(threadId: string): Promise<void>;
} {
  const held = new Map<string, { confirm(): Promise<void> }>();
  return {
    async lease(threadId) {
      const key = `selfheal:thread:${threadId}`;
      let current: HeldLock | null | undefined = await lock(pool, key);
      if (!current) throw new ThreadBusyError(`thread ${threadId} is being run by another worker right now`);
      // A checkpoint and a step's writes confirm side by side: they share one attempt to re-take
      // the lock, or the second would find the first's new lock and take it for another worker's.
      let retaking: Promise<void> | undefined;
      const retake = async () => {
        const next = await lock(pool, key);
        if (!next) {
          throw new ThreadBusyError(
            `thread ${threadId} was taken by another worker while the database was away; this run stops here`,
          );
        }
        current?.discard();
        current = next;
      };
      const lease = {
        confirm() {
          if (!current?.lost) return Promise.resolve();
          retaking ??= retake().finally(() => {
            retaking = undefined;
          });
          return retaking;
        },
        async release() {
          // A write of this run still waiting for the database must not land once the thread is let go.
          if (held.get(threadId) === lease) held.set(threadId, letGo(threadId));
          await current?.unlock();
          current = undefined;
        },
      };
      held.set(threadId, lease);
      return lease;
    },
    async confirm(threadId) {
      await held.get(threadId)?.confirm();
    },
  };
}

/** What a released thread's late writes meet: a refusal, until this process leases the thread again. */
function letGo(threadId: string): { confirm(): Promise<void> } {
  return {
    confirm: () =>
      Promise.reject(new ThreadBusyError(`thread ${threadId} was let go by this process; its run writes no more`)),
  };
}

interface HeldLock {
  /** True once its connection ended or failed: the server has dropped the lock with it. */
  readonly lost: boolean;
  unlock(): Promise<void>;
  /** Closes a lost lock's connection. */
  discard(): void;
}

/** The advisory lock on `key` on a connection of its own, or null when another session holds it. */
async function lock(pool: pg.Pool, key: string): Promise<HeldLock | null> {
  const client = await pool.connect();
  let lost = false;
  // A checked-out client whose connection dies emits 'error'; unheard, it would end the process.
  const markLost = () => {
    lost = true;
  };
  client.on("error", markLost);
  client.on("end", markLost);
  const letGo = (error?: Error | boolean) => {
    client.off("error", markLost);
    client.off("end", markLost);
    client.release(error);
  };
  try {
    const { rows } = await client.query<{ locked: boolean }>(
      "SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked",
      [key],
    );
    if (!rows[0]?.locked) {
      letGo();
      return null;
    }
  } catch (error) {
    letGo(error instanceof Error ? error : true);
    throw error;
  }
  return {
    get lost() {
      return lost;
    },
    async unlock() {
      if (lost) {
        letGo(true);
        return;
      }
      try {
        await client.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [key]);
        letGo();
      } catch (error) {
        // The connection is already gone, and the lock with it: discard the client and carry on,
        // so a failed unlock never hides the run's own result.
        letGo(error instanceof Error ? error : true);
      }
    },
    discard() {
      letGo(true);
    },
  };
}
