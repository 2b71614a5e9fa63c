import type { ForkServer } from "./fork-server.js";

/** Starts failing this many times in a row: the launcher stops trying and its runs start cold. */
const MAX_FAILED_STARTS = 3;

/**
 * Keeps one fork server running for a launcher: started on first need, started again when it dies
 * (runs meanwhile start cold), and given up after `MAX_FAILED_STARTS` failed starts in a row, with
 * the reason kept for `describe()`.
 */
export class ForkServerSupervisor {
  private server: ForkServer | null = null;
  private starting: Promise<void> | null = null;
  private failedStarts = 0;
  private lastFailure: string | null = null;
  private closed = false;

  constructor(private readonly startServer: () => Promise<ForkServer>) {}

  /** The running server, or null (then one is being started, unless starting keeps failing). */
  current(): ForkServer | null {
    if (this.server?.alive) return this.server;
    this.server = null;
    if (!this.closed && !this.starting && this.failedStarts < MAX_FAILED_STARTS) this.starting = this.start();
    return null;
  }

  /** Resolves once a server runs (or starting it failed): benchmarks and tests wait for it. */
  async ready(): Promise<ForkServer | null> {
    this.current();
    await this.starting;
    return this.server?.alive ? this.server : null;
  }

  /** Why runs are not forked now, or null while a server runs or may still start. */
  get givenUpBecause(): string | null {
    return this.failedStarts >= MAX_FAILED_STARTS ? this.lastFailure : null;
  }

  private async start(): Promise<void> {
    try {
      const server = await this.startServer();
      if (this.closed) {
        await server.close();
        return;
      }
      this.server = server;
      this.failedStarts = 0;
      void server.whenGone().then(() => {
        if (this.server === server) this.server = null;
      });
    } catch (error) {
      this.failedStarts += 1;
      this.lastFailure = error instanceof Error ? error.message : String(error);
    } finally {
      this.starting = null;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.starting;
    const server = this.server;
    this.server = null;
    await server?.close();
  }
}
