import { StoreUnavailableError } from "../core/errors.js";

/**
 * What a run store reports while its database is away, once per wait: `waiting` when an operation
 * first fails for want of the database (or has had no answer for a while), `back` when it succeeds,
 * `gave_up` when it failed after all (past the bound, or refused once the database answered).
 */
export type StoreWaitEvent =
  | { kind: "waiting"; threadId?: string; operation: string; reason: string; boundMs: number }
  | { kind: "back" | "gave_up"; threadId?: string; operation: string; waitedMs: number };

export type StoreWaitListener = (event: StoreWaitEvent) => void;

/**
 * A store's listeners, told once per outage per thread: a checkpoint and a step's writes waiting
 * side by side make one `waiting`, and one `back` when the last of them gets through.
 */
export class StoreWaits {
  private readonly listeners = new Set<StoreWaitListener>();
  private readonly open = new Map<string | undefined, { count: number; since: number }>();

  on(listener: StoreWaitListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  report(event: StoreWaitEvent): void {
    const wait = this.open.get(event.threadId);
    if (event.kind === "waiting") {
      if (wait) wait.count += 1;
      else {
        this.open.set(event.threadId, { count: 1, since: Date.now() });
        this.tell(event);
      }
      return;
    }
    if (!wait) return;
    wait.count -= 1;
    // Some got through while another gave up: the store was back, as the one through says.
    if (wait.count > 0) return;
    this.open.delete(event.threadId);
    this.tell({ ...event, waitedMs: Date.now() - wait.since });
  }

  private tell(event: StoreWaitEvent): void {
    for (const listener of this.listeners) listener(event);
  }
}

/** How a store tells a database that is away from one that refused the operation. */
export type OutageTest = (error: unknown) => boolean;

export interface WaitOptions {
  /** What the operation does, for the events and the error: "saving a checkpoint". */
  operation: string;
  threadId?: string;
  /** How long the operation may wait, from its start, before it fails with StoreUnavailableError. */
  boundMs: number;
  isOutage: OutageTest;
  /** Where the database is, for the error's message (no password). */
  where: string;
  report: StoreWaitListener;
  /** The run's own: a run stopped (Ctrl-C, a cancelled job) stops waiting for its store too. */
  signal?: AbortSignal;
}

/** An operation with no answer for this long counts as waiting (a stalled connection says nothing). */
export const NO_ANSWER_NOTICE_MS = 5_000;
/** How long any attempt may take to answer, whatever the bound: a connection's own timeout. */
const SHORTEST_ANSWER_WAIT_MS = 10_000;
const FIRST_RETRY_MS = 250;
const LONGEST_RETRY_MS = 5_000;

/**
 * Runs `operation` until it succeeds, retrying with backoff while the database is away, for at
 * most `boundMs` from its start; then throws StoreUnavailableError. Any other error goes through at
 * once. An attempt that hangs is waited on up to the bound (a stalled connection that comes back
 * answers it); a retry starts only after an attempt failed, so no write is ever in flight twice.
 */
export async function waitForStore<T>(operation: () => Promise<T>, options: WaitOptions): Promise<T> {
  const started = Date.now();
  const deadline = started + options.boundMs;
  // Even with no wait at all (a bound of 0: no retry), an attempt gets time to answer.
  const answerBy = started + Math.max(options.boundMs, SHORTEST_ANSWER_WAIT_MS);
  let reason: string | undefined;
  const waiting = (why: string) => {
    if (reason !== undefined) return;
    reason = why;
    options.report({
      kind: "waiting",
      threadId: options.threadId,
      operation: options.operation,
      reason: why,
      boundMs: options.boundMs,
    });
  };
  const ended = (kind: "back" | "gave_up") => {
    if (reason !== undefined)
      options.report({
        kind,
        threadId: options.threadId,
        operation: options.operation,
        waitedMs: Date.now() - started,
      });
  };
  let delay = FIRST_RETRY_MS;
  for (;;) {
    try {
      options.signal?.throwIfAborted();
      const value = await answeredBy(operation(), answerBy, () => waiting("no answer yet"), options.signal);
      ended("back");
      return value;
    } catch (error) {
      const outage = !(error instanceof NoAnswer) && !options.signal?.aborted && options.isOutage(error);
      if (outage) waiting(describeOutage(error));
      const pause = Math.min(delay * (0.5 + Math.random() / 2), deadline - Date.now());
      if (!outage || pause <= 0) {
        ended("gave_up");
        if (error instanceof NoAnswer) throw unavailable(options, reason ?? "no answer");
        throw outage ? unavailable(options, describeOutage(error), error) : error;
      }
      await pauseFor(pause, options.signal);
      delay = Math.min(delay * 2, LONGEST_RETRY_MS);
    }
  }
}

class NoAnswer extends Error {}

/**
 * The attempt's own outcome, or NoAnswer at the deadline, or the signal's reason once it aborts;
 * `onSlow` once it has taken NO_ANSWER_NOTICE_MS.
 */
function answeredBy<T>(attempt: Promise<T>, deadline: number, onSlow: () => void, signal?: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const notice = setTimeout(onSlow, NO_ANSWER_NOTICE_MS);
    const giveUp = setTimeout(() => reject(new NoAnswer()), Math.max(0, deadline - Date.now()));
    const onAbort = () => reject(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    const settle = () => {
      clearTimeout(notice);
      clearTimeout(giveUp);
      signal?.removeEventListener("abort", onAbort);
    };
    attempt.then(
      (value) => {
        settle();
        resolve(value);
      },
      (error) => {
        settle();
        reject(error);
      },
    );
  });
}

/** Sleeps `ms`, or less when the signal aborts (then throws its reason). */
function pauseFor(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function unavailable(options: WaitOptions, reason: string, cause?: unknown): StoreUnavailableError {
  const seconds = Math.round(options.boundMs / 1000);
  const waited = seconds > 0 ? ` for ${seconds} s` : "";
  return new StoreUnavailableError(
    `the run store at ${options.where} did not answer${waited} while ${options.operation} (${reason})`,
    { cause },
  );
}

/** One short phrase for the error that showed the database away. */
export function describeOutage(error: unknown): string {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  const text = typeof message === "string" && message !== "" ? message : String(error);
  return typeof code === "string" && !text.includes(code) ? `${text} (${code})` : text;
}

/**
 * What every connection of ours to PostgreSQL is opened with. A server that accepts and never
 * answers (a partition, a hung host) fails a new connection after this long instead of never;
 * keepalive finds a connection whose server vanished without a word.
 */
export const POSTGRES_CONNECTION_OPTIONS = { connectionTimeoutMillis: 10_000, keepAlive: true } as const;

/** Socket errors that say the server is out of reach, not that it refused the request. */
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
]);

/**
 * SQLSTATEs of a server that is going away or not yet back: class 08 (connection exception),
 * 57P01-57P03 (shut down by an administrator, crashed, starting up), 53300 (too many connections).
 */
const SERVER_AWAY = /^(08...|57P0[123]|53300)$/;

/** pg's own words for a connection that died or never came (it gives them no code). */
const PG_CONNECTION_MESSAGES = [
  "Connection terminated",
  "timeout expired",
  "timeout exceeded when trying to connect",
  "Client has encountered a connection error and is not queryable",
  "Client was closed and is not queryable",
];

/** Whether a PostgreSQL operation failed because the database is away (retry it) rather than refused. */
export function isPostgresOutage(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === "string" && (NETWORK_CODES.has(code) || SERVER_AWAY.test(code))) return true;
  if (typeof message === "string" && PG_CONNECTION_MESSAGES.some((words) => message.startsWith(words))) return true;
  const cause = (error as { cause?: unknown } | null)?.cause;
  return cause !== undefined && cause !== error && isPostgresOutage(cause);
}

/**
 * Whether a SQLite operation failed for a reason that passes: another process holds the write lock
 * past the busy timeout, the disk is full, or an I/O error (a disk that went away for a moment).
 */
export function isSqliteOutage(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (
    typeof code === "string" &&
    (code.startsWith("SQLITE_BUSY") ||
      code.startsWith("SQLITE_LOCKED") ||
      code === "SQLITE_FULL" ||
      code.startsWith("SQLITE_IOERR"))
  );
}

/** One line of progress for the run waiting on its database, and for the database back. */
export function describeStoreWait(event: StoreWaitEvent): string {
  if (event.kind !== "waiting") {
    const waited = (event.waitedMs / 1000).toFixed(1);
    return event.kind === "back"
      ? `the run store answered again after ${waited} s; the run goes on`
      : `stopped waiting for the run store after ${waited} s`;
  }
  return `waiting for the run store (${event.operation}): ${event.reason}; the run waits up to ${Math.round(event.boundMs / 1000)} s (storeWaitSeconds)`;
}
