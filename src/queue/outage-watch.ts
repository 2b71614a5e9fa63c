import { describeOutage, isPostgresOutage } from "../store/outage.js";

/** What the queue says about its database: once when it goes away, once when it answers again. */
export type QueueOutageEvent = { kind: "away"; reason: string } | { kind: "back"; waitedMs: number };

const FIRST_PROBE_MS = 250;
const LONGEST_PROBE_MS = 5_000;

/**
 * pg-boss reports every failed poll, maintenance pass and completion as an 'error' event, several a
 * second while the database is away. This turns those into one `away` and one `back`: the first
 * outage error starts a probe of its own (`SELECT 1` with backoff), and the probe's first answer is
 * `back`. Errors that are not outages go to `onOtherError` as they come.
 */
export class OutageWatch {
  private awaySince: number | undefined;
  private probe: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    /** Any pool of the queue's database: only `SELECT 1` is asked of it. */
    private readonly pool: { query(sql: string): Promise<unknown> },
    private readonly onEvent: (event: QueueOutageEvent) => void,
    private readonly onOtherError: (error: Error) => void,
  ) {}

  /** For pg-boss's 'error' events, and anything else of the queue's that found the database away. */
  readonly report = (error: Error): void => {
    if (!isPostgresOutage(error)) {
      this.onOtherError(error);
      return;
    }
    if (this.awaySince !== undefined || this.closed) return;
    this.awaySince = Date.now();
    this.onEvent({ kind: "away", reason: describeOutage(error) });
    this.schedule(FIRST_PROBE_MS);
  };

  close(): void {
    this.closed = true;
    clearTimeout(this.probe);
  }

  private schedule(delay: number): void {
    this.probe = setTimeout(async () => {
      try {
        await this.pool.query("SELECT 1");
      } catch {
        if (!this.closed) this.schedule(Math.min(delay * 2, LONGEST_PROBE_MS));
        return;
      }
      const since = this.awaySince ?? Date.now();
      this.awaySince = undefined;
      if (!this.closed) this.onEvent({ kind: "back", waitedMs: Date.now() - since });
    }, delay);
    this.probe.unref();
  }
}

/**
 * pg-boss 10 completes and fails jobs without awaiting the promise, so one that meets the database
 * away is an unhandled rejection, which ends a Node process. For a process whose work is the queue
 * (`selfheal worker`): such a rejection goes to `report` and the process goes on; any other one
 * still ends it, as Node would have. Returns the function that takes the guard off.
 */
export function surviveQueueOutages(report: (error: Error) => void): () => void {
  const onRejection = (reason: unknown) => {
    if (!isPostgresOutage(reason)) throw reason;
    report(reason instanceof Error ? reason : new Error(describeOutage(reason)));
  };
  process.on("unhandledRejection", onRejection);
  return () => process.off("unhandledRejection", onRejection);
}
