import pg from "pg";
import type { QueueSchemaName } from "../core/queue-schema.js";
import { POSTGRES_CONNECTION_OPTIONS } from "../store/outage.js";

/**
 * pg-boss 10 only polls: an idle worker saw a new job up to a whole polling interval after it was
 * sent. `submit` now says so on this channel (the payload names the queue's schema, which may be
 * longer than a channel name may be), and a worker that hears it fetches at once. Polling stays as
 * the fallback: for retries that come due later, and for a moment the listening connection is down.
 */
const CHANNEL = "selfheal_jobs";

/** Tells the listening workers of `schema` that jobs are waiting; delivered when the caller's transaction commits. */
export async function announceJobs(pool: pg.Pool, schema: QueueSchemaName): Promise<void> {
  await pool.query("SELECT pg_notify($1, $2)", [CHANNEL, schema]);
}

export interface JobListener {
  close(): Promise<void>;
}

/**
 * Calls `onJobs` whenever jobs are announced for `schema`, on a connection of its own (LISTEN
 * holds a session). A lost connection is opened again after `retryMs`; in between the worker
 * finds new jobs by polling, a little later.
 */
export function listenForJobs(url: string, schema: QueueSchemaName, onJobs: () => void, retryMs = 1_000): JobListener {
  let client: pg.Client | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;
  const connect = async () => {
    const next = new pg.Client({
      connectionString: url,
      application_name: `selfheal queue listener ${process.pid}`,
      ...POSTGRES_CONNECTION_OPTIONS,
    });
    next.on("notification", (message) => {
      if (message.payload === schema) onJobs();
    });
    const reconnect = () => {
      if (client !== next) return;
      client = undefined;
      void next.end().catch(() => undefined);
      if (!closed) retry = setTimeout(() => void connect(), retryMs);
    };
    next.on("error", reconnect);
    next.on("end", reconnect);
    client = next;
    try {
      await next.connect();
      await next.query(`LISTEN ${CHANNEL}`);
      if (closed) await next.end();
      // Jobs sent while the connection was down wait for no poll.
      else onJobs();
    } catch {
      reconnect();
    }
  };
  void connect();
  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      const last = client;
      client = undefined;
      await last?.end().catch(() => undefined);
    },
  };
}
