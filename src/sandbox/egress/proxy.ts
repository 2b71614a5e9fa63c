import { lookup } from "node:dns/promises";
import { once } from "node:events";
import {
  type ClientRequest,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP, type Socket, connect as tcpConnect } from "node:net";
import type { Duplex, Readable, Writable } from "node:stream";
import { createSecureContext, rootCertificates, TLSSocket } from "node:tls";
import { type Allowlist, type AllowlistEntry, canonicalHost, matchAllowlist } from "../../core/allowlist.js";
import type { ConnectionRecord } from "../../core/run-result.js";
import { isPrivateAddress } from "./addresses.js";
import {
  connectTarget,
  forwardedHeaders,
  httpRequestTarget,
  type RequestTarget,
  type TargetProblem,
} from "./request-target.js";

/** A host's addresses, in the order to try them; the proxy connects to one of these and asks no one again. */
export type ResolveHost = (host: string) => Promise<string[]>;

export interface EgressProxyOptions {
  /** The hosts and ports a program may reach (parseAllowlist); everything else is refused. */
  allowlist: Allowlist;
  /**
   * Where the proxy listens: a port of 127.0.0.1 (0, the default, picks a free one), or a unix
   * socket path, which a sandbox without a network reaches through a bind mount.
   */
  listen?: { port: number } | { path: string };
  /** Connections the proxy opens to listed hosts in its life; later requests are refused. */
  maxConnections: number;
  /** Bytes through the proxy in both directions, all connections together; past it, new requests are refused and open ones cut. */
  maxBytes: number;
  /**
   * Lets a listed name reach private, loopback and link-local addresses. Tests use it to reach
   * their loopback servers; a real run passes it only when the user's list itself names such a
   * host (a machine on the local network they mean), never by default. A function decides per
   * host (canonical, as the list compares it).
   */
  allowPrivateAddresses?: boolean | ((host: string) => boolean);
  /** Default: the system resolver (getaddrinfo, every address). Tests map names to their servers. */
  resolve?: ResolveHost;
  /**
   * For entries with `tls: "terminate"`: the certificate the proxy shows the program for a host (of
   * the run's own CA, run-ca.ts), and the CAs it trusts beyond the system's when it connects on
   * (a private CA of the user's hosts, SELFHEAL_EGRESS_CA_FILE). Without it such entries tunnel.
   */
  tls?: { issue(host: string): { key: string; cert: string }; trusted?: string[] };
}

export type EgressProxyAddress = { kind: "tcp"; host: "127.0.0.1"; port: number } | { kind: "unix"; path: string };

export interface EgressProxy {
  address: EgressProxyAddress;
  /** Every request so far, in the order the proxy decided them (a copy). */
  connections(): ConnectionRecord[];
  /** Refusals past the first MAX_RECORDED_REFUSALS, counted but not recorded one by one. */
  unrecordedRefusals(): number;
  /** Stops listening and ends every connection, the tunnels included; resolves once all is closed. */
  close(): Promise<void>;
}

/** A program that loops on refused requests must not grow the records without bound. */
export const MAX_RECORDED_REFUSALS = 1_000;

/** Starts an HTTP forward proxy for plain requests and CONNECT tunnels that lets through only what `options.allowlist` names. */
export async function startEgressProxy(options: EgressProxyOptions): Promise<EgressProxy> {
  const proxy = new AllowlistProxy(options);
  await proxy.listen();
  return proxy;
}

export const resolveWithSystem: ResolveHost = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((found) => found.address);

/** A request turned away: what it asked for, the status it is answered with, and why. */
type Refusal = Omit<TargetProblem, "status"> & { status: 400 | 403 | 502 };

/** What `admit` decided: a record in the list either way, and for an allowed request the address to connect to. */
type Admission =
  | { allowed: true; record: ConnectionRecord; address: string; entry: AllowlistEntry }
  | { allowed: false; status: 400 | 403 | 502; reason: string };

class AllowlistProxy implements EgressProxy {
  address: EgressProxyAddress = { kind: "tcp", host: "127.0.0.1", port: 0 };
  private readonly server = createServer();
  /** Serves the requests inside the tunnels whose TLS the proxy ends (`tls: "terminate"`). */
  private readonly decrypted = createServer();
  private readonly tunnels = new WeakMap<object, Tunnel>();
  private readonly records: ConnectionRecord[] = [];
  private readonly sockets = new Set<Duplex>();
  private readonly resolve: ResolveHost;
  private refusalsRecorded = 0;
  private refusalsUnrecorded = 0;
  /** Connections admitted (or being admitted), against maxConnections. */
  private opened = 0;
  private bytes = 0;
  private closed = false;

  constructor(private readonly options: EgressProxyOptions) {
    this.resolve = options.resolve ?? resolveWithSystem;
    this.server.on("connection", (socket: Socket) => this.track(socket));
    this.server.on("request", (request: IncomingMessage, response: ServerResponse) => {
      this.forwardRequest(request, response).catch((error) => response.destroy(error));
    });
    this.server.on("connect", (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      this.openTunnel(request, socket, head).catch(() => socket.destroy());
    });
    this.decrypted.on("request", (request: IncomingMessage, response: ServerResponse) => {
      const tunnel = this.tunnels.get(request.socket);
      if (tunnel) this.forwardDecrypted(request, response, tunnel);
      else response.destroy();
    });
  }

  async listen(): Promise<void> {
    const where = this.options.listen ?? { port: 0 };
    if ("path" in where) this.server.listen(where.path);
    else this.server.listen(where.port, "127.0.0.1");
    await once(this.server, "listening");
    const bound = this.server.address();
    this.address =
      typeof bound === "string" || bound === null
        ? { kind: "unix", path: bound ?? "" }
        : { kind: "tcp", host: "127.0.0.1", port: bound.port };
  }

  connections(): ConnectionRecord[] {
    return this.records.map((record) => ({ ...record }));
  }

  unrecordedRefusals(): number {
    return this.refusalsUnrecorded;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const stopped = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    this.server.closeAllConnections();
    await stopped;
  }

  /** A plain HTTP request: checked, then sent on to the admitted address with one fresh connection. */
  private async forwardRequest(request: IncomingMessage, response: ServerResponse): Promise<void> {
    request.on("error", () => response.destroy());
    response.on("error", () => undefined);
    const target = httpRequestTarget(request.url ?? "", request.headers);
    const admission = "status" in target ? this.refuse("HTTP", target) : await this.admit("HTTP", target);
    if (!admission.allowed || "status" in target) {
      if (!admission.allowed) answerPlainly(response, admission.status, admission.reason);
      return;
    }
    const { record, entry } = admission;
    const upstream = httpRequest({
      host: admission.address,
      port: target.port,
      method: request.method,
      path: target.path,
      headers: forwardedHeaders(request.headers, { ...addedHeaders(entry), host: target.authority }),
      agent: false,
    });
    this.relayExchange(request, response, upstream, record, { keepAlive: false });
  }

  /**
   * One request inside a tunnel whose TLS the proxy ended: its Host must name the tunnel's host,
   * and it goes on over the proxy's own TLS to the admitted address, whose certificate must be
   * valid for the name.
   */
  private forwardDecrypted(request: IncomingMessage, response: ServerResponse, tunnel: Tunnel): void {
    request.on("error", () => response.destroy());
    response.on("error", () => undefined);
    const { record, entry, address } = tunnel;
    const authority = `${record.host}:${record.port}`;
    if (!sameAuthority(String(request.headers.host ?? ""), record.host, record.port, 443)) {
      const reason = `the request's Host header (${request.headers.host ?? "none"}) is not the tunnel's host (${authority})`;
      record.reason ??= reason;
      answerPlainly(response, 403, reason);
      return;
    }
    const trusted = this.options.tls?.trusted ?? [];
    const upstream = httpsRequest({
      host: address,
      port: record.port,
      servername: record.host,
      method: request.method,
      path: request.url ?? "/",
      headers: forwardedHeaders(request.headers, { ...addedHeaders(entry), host: String(request.headers.host) }),
      agent: false,
      ...(trusted.length > 0 ? { ca: [...rootCertificates, ...trusted] } : {}),
    });
    // The program's TLS connection stays open for its next request, and the program closes it: a
    // proxy that closed it after the answer met the program's own close_notify on a closed socket,
    // whose reset could reach Node's client before it had read the answer (ECONNRESET in CI).
    this.relayExchange(request, response, upstream, record, { keepAlive: true });
  }

  /** Sends the program's request on as `upstream`, and its answer back; both ways metered. */
  private relayExchange(
    request: IncomingMessage,
    response: ServerResponse,
    upstream: ClientRequest,
    record: ConnectionRecord,
    { keepAlive }: { keepAlive: boolean },
  ): void {
    const cut = () => {
      upstream.destroy();
      response.destroy();
    };
    upstream.on("socket", (socket) => this.track(socket));
    // The program hung up (or the answer is complete): nothing more to fetch for it.
    response.on("close", () => upstream.destroy());
    upstream.on("error", (error) => {
      if (response.headersSent) return response.destroy();
      record.reason ??= `could not reach ${record.host}:${record.port}: ${errorCode(error)}`;
      answerPlainly(response, 502, record.reason);
    });
    upstream.on("response", (answer) => {
      answer.on("error", () => response.destroy());
      const { connection, ...kept } = forwardedHeaders(answer.headers);
      response.writeHead(answer.statusCode ?? 502, answer.statusMessage, keepAlive ? kept : { ...kept, connection });
      this.meter(answer, response, record, "bytesDown", cut);
    });
    this.meter(request, upstream, record, "bytesUp", cut);
  }

  /** A CONNECT tunnel: checked, then bytes both ways to the admitted address, never looked into. */
  private async openTunnel(request: IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
    client.on("error", () => client.destroy());
    const target = connectTarget(request.url ?? "");
    const admission = "status" in target ? this.refuse("CONNECT", target) : await this.admit("CONNECT", target);
    if (!admission.allowed) {
      client.end(statusLine(admission.status, admission.reason));
      return;
    }
    const { record } = admission;
    if (admission.entry.terminateTls && this.options.tls) {
      this.endTls(client, head, { record, entry: admission.entry, address: admission.address });
      return;
    }
    const upstream = tcpConnect({ host: admission.address, port: record.port });
    this.track(upstream);
    let connected = false;
    const cut = () => {
      upstream.destroy();
      client.destroy();
    };
    upstream.on("error", (error) => {
      if (connected) return cut();
      record.reason ??= `could not reach ${record.host}:${record.port}: ${errorCode(error)}`;
      client.end(statusLine(502, record.reason));
    });
    client.on("error", cut);
    // One side gone: the other gets what is still on its way to it, then its end (errors cut both).
    upstream.on("close", () => client.end());
    client.on("close", () => upstream.end());
    upstream.on("connect", () => {
      connected = true;
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length > 0) {
        if (!this.account(record, "bytesUp", head.length)) return cut();
        upstream.write(head);
      }
      this.meter(client, upstream, record, "bytesUp", cut);
      this.meter(upstream, client, record, "bytesDown", cut);
    });
  }

  /**
   * Ends the program's TLS in an admitted tunnel with a certificate of the run's CA for its host,
   * and serves the requests inside (forwardDecrypted); the tunnel counts as the one connection.
   */
  private endTls(client: Duplex, head: Buffer, tunnel: Tunnel): void {
    const { record } = tunnel;
    const tls = this.options.tls;
    if (!tls) return;
    client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    if (head.length > 0) client.unshift(head);
    const secure = new TLSSocket(client as Socket, {
      isServer: true,
      secureContext: createSecureContext(tls.issue(record.host)),
    });
    this.track(secure);
    let established = false;
    secure.once("secure", () => {
      established = true;
    });
    secure.on("error", (error) => {
      // The program sees only a closed socket: why its handshake failed is told in the record.
      if (!established) record.reason ??= `the TLS handshake with the proxy failed: ${errorCode(error)}`;
      secure.destroy();
    });
    this.tunnels.set(secure, tunnel);
    this.decrypted.emit("connection", secure);
  }

  /**
   * Decides a request the targets' parsing let through: the list (host and port), the limits, then
   * the address. The name is resolved here, once, and the address chosen is the one connected to,
   * so a second DNS answer (rebinding) can never redirect an allowed name.
   */
  private async admit(method: ConnectionRecord["method"], target: RequestTarget): Promise<Admission> {
    const { host, port } = target;
    const refuse = (status: 400 | 403 | 502, reason: string) => this.refuse(method, { host, port, status, reason });
    const canonical = canonicalHost(host);
    if ("error" in canonical) return refuse(400, `${host} is not a host the proxy can reach: ${canonical.error}`);
    const name = canonical.host;
    const entry = matchAllowlist(this.options.allowlist, name, port);
    if (!entry) return refuse(403, this.notListed(canonical, port));
    if (this.opened >= this.options.maxConnections) {
      return refuse(403, `the proxy's connection limit (${this.options.maxConnections}) is reached`);
    }
    if (this.bytes >= this.options.maxBytes) {
      return refuse(403, `the proxy's byte limit (${this.options.maxBytes} bytes) is reached`);
    }
    // Taken before the name is resolved, so requests arriving together cannot all pass the limit.
    this.opened += 1;
    let addresses: string[];
    try {
      addresses = canonical.kind === "name" ? await this.resolve(name) : [name];
    } catch (error) {
      this.opened -= 1;
      return refuse(502, `could not resolve ${name}: ${errorCode(error)}`);
    }
    // Only addresses: a name handed on to connect() would be resolved again, out of the list's sight.
    const { allowPrivateAddresses } = this.options;
    const privateAllowed =
      typeof allowPrivateAddresses === "function" ? allowPrivateAddresses(name) : allowPrivateAddresses === true;
    const usable = addresses.filter((address) => isIP(address) !== 0 && (privateAllowed || !isPrivateAddress(address)));
    const address = usable[0];
    if (this.closed || address === undefined) {
      this.opened -= 1;
      if (this.closed) return refuse(403, "the proxy is closed");
      if (!addresses.some((address) => isIP(address) !== 0)) return refuse(502, `${name} has no address`);
      return refuse(403, `${name} resolves to a private address (${addresses[0]}), which the proxy does not reach`);
    }
    const record: ConnectionRecord = { host: name, port, method, allowed: true, bytesUp: 0, bytesDown: 0 };
    this.records.push(record);
    return { allowed: true, record, address, entry };
  }

  /** Why a host:port is not on the list, in words that tell the user what to add. */
  private notListed(host: { kind: string; host: string }, port: number): string {
    if (host.kind !== "name") return `the IP address ${host.host} is not on the allowlist (only a listed address is)`;
    const onOtherPorts = this.options.allowlist.some((entry) =>
      entry.ports.some((listed) => matchAllowlist([entry], host.host, listed)),
    );
    if (onOtherPorts) return `${host.host} is on the allowlist, but not port ${port}`;
    return `${host.host} is not on the allowlist`;
  }

  private refuse(method: ConnectionRecord["method"], problem: Refusal): Admission & { allowed: false } {
    const record: ConnectionRecord = {
      host: problem.host,
      port: problem.port,
      method,
      allowed: false,
      reason: problem.reason,
      bytesUp: 0,
      bytesDown: 0,
    };
    if (this.refusalsRecorded < MAX_RECORDED_REFUSALS) {
      this.refusalsRecorded += 1;
      this.records.push(record);
    } else {
      this.refusalsUnrecorded += 1;
    }
    return { allowed: false, status: problem.status, reason: problem.reason };
  }

  /**
   * Copies `from` to `to` as pipe does (backpressure included), counting each chunk before it is
   * written: a chunk that would carry the proxy past maxBytes is not written, and `cut` ends the
   * connection.
   */
  private meter(
    from: Readable,
    to: Writable,
    record: ConnectionRecord,
    direction: "bytesUp" | "bytesDown",
    cut: () => void,
  ): void {
    from.on("data", (chunk: Buffer) => {
      if (!this.account(record, direction, chunk.length)) return cut();
      if (!to.write(chunk)) from.pause();
    });
    to.on("drain", () => from.resume());
    from.on("end", () => to.end());
  }

  /** Counts `bytes` against the proxy's limit; false (and the reason recorded) when they would pass it. */
  private account(record: ConnectionRecord, direction: "bytesUp" | "bytesDown", bytes: number): boolean {
    if (this.bytes + bytes > this.options.maxBytes) {
      record.reason ??= `cut at the proxy's byte limit (${this.options.maxBytes} bytes)`;
      // The chunk that did not fit spends what was left: later requests are refused, not let through to be cut.
      this.bytes = this.options.maxBytes;
      return false;
    }
    this.bytes += bytes;
    record[direction] += bytes;
    return true;
  }

  private track(socket: Duplex): void {
    if (this.closed) {
      socket.destroy();
      return;
    }
    this.sockets.add(socket);
    socket.on("close", () => this.sockets.delete(socket));
  }
}

/** An admitted tunnel whose TLS the proxy ends. */
interface Tunnel {
  record: ConnectionRecord;
  entry: AllowlistEntry;
  address: string;
}

/**
 * The entry's own headers (a token read from the host's environment), lowercase: they go last, so
 * the program's header of the same name is replaced, never sent beside it.
 */
function addedHeaders(entry: AllowlistEntry): Record<string, string> {
  return Object.fromEntries(Object.entries(entry.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]));
}

/** Whether a Host header names `host` on `port` (its port left out where it is the default). */
function sameAuthority(header: string, host: string, port: number, defaultPort: number): boolean {
  const colon = header.lastIndexOf(":");
  const hasPort = colon > header.lastIndexOf("]");
  const named = canonicalHost(hasPort ? header.slice(0, colon) : header);
  const namedPort = hasPort ? Number(header.slice(colon + 1)) : defaultPort;
  return !("error" in named) && named.host === host && namedPort === port;
}

/** The answer to a plain request that is not let through or cannot be served: its status and one line. */
function answerPlainly(response: ServerResponse, status: number, reason: string): void {
  response.writeHead(status, { "content-type": "text/plain; charset=utf-8", connection: "close" });
  response.end(`${reason}\n`);
}

/** A complete HTTP/1.1 answer to a CONNECT that is not let through, with its reason as the body. */
function statusLine(status: 400 | 403 | 502, reason: string): string {
  const text = { 400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway" }[status];
  const body = `${reason}\n`;
  return `HTTP/1.1 ${status} ${text}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  return typeof code === "string" ? code : error instanceof Error ? error.message : String(error);
}
