import { createServer, type Server, type Socket, connect as tcpConnect } from "node:net";

/**
 * A TCP proxy between our processes and PostgreSQL that a test can break the way networks and
 * databases break: `cut()` drops every connection at once (a restart, a failover), `refuse()` keeps
 * new ones out as well (the server down), `stall()` accepts and forwards nothing in either
 * direction (a network partition, a server hung in I/O), and `heal()` comes back: refused
 * connections are accepted again, and stalled ones flow on from where they stopped.
 */
export class TcpProxy {
  private mode: "open" | "refusing" | "stalled" = "open";
  private readonly pairs = new Set<{ client: Socket; server?: Socket }>();
  /** Connections accepted while stalled, each waiting to be joined to the server on heal. */
  private readonly waiting: (() => void)[] = [];

  private constructor(
    private readonly server: Server,
    private readonly target: { host: string; port: number },
    readonly port: number,
  ) {}

  /** Listens on a free port of 127.0.0.1 and forwards to `target`. */
  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    let proxy: TcpProxy | undefined;
    const server = createServer((client) => proxy?.accept(client));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    proxy = new TcpProxy(server, target, (server.address() as { port: number }).port);
    return proxy;
  }

  /** `url` with its host and port replaced by the proxy's. */
  static through(url: string, proxy: TcpProxy): string {
    const parsed = new URL(url);
    parsed.hostname = "127.0.0.1";
    parsed.port = String(proxy.port);
    return parsed.toString();
  }

  /** Connections open through the proxy now. */
  get connections(): number {
    return this.pairs.size;
  }

  /** Drops every open connection; new ones are let through. */
  cut(): void {
    for (const pair of [...this.pairs]) this.drop(pair);
  }

  /** Drops every open connection and every new one at once, until `heal()`. */
  refuse(): void {
    this.mode = "refusing";
    this.cut();
  }

  /** Forwards nothing either way, on open connections and new ones, until `heal()`; drops none. */
  stall(): void {
    this.mode = "stalled";
    for (const pair of this.pairs) {
      pair.client.pause();
      pair.server?.pause();
    }
  }

  heal(): void {
    this.mode = "open";
    for (const pair of this.pairs) {
      pair.client.resume();
      pair.server?.resume();
    }
    for (const join of this.waiting.splice(0)) join();
  }

  async close(): Promise<void> {
    this.cut();
    this.waiting.length = 0;
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    if (this.mode === "refusing") {
      client.destroy();
      return;
    }
    const pair: { client: Socket; server?: Socket } = { client };
    this.pairs.add(pair);
    client.on("error", () => this.drop(pair));
    client.on("close", () => this.drop(pair));
    client.pause();
    const join = () => {
      if (!this.pairs.has(pair)) return;
      const server = tcpConnect(this.target.port, this.target.host);
      pair.server = server;
      server.on("error", () => this.drop(pair));
      server.on("close", () => this.drop(pair));
      client.pipe(server);
      server.pipe(client);
      client.resume();
    };
    if (this.mode === "stalled") this.waiting.push(join);
    else join();
  }

  private drop(pair: { client: Socket; server?: Socket }): void {
    if (!this.pairs.delete(pair)) return;
    pair.client.destroy();
    pair.server?.destroy();
  }
}
