import { createHash, randomUUID, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { UsageError } from "../internal.js";
import type { McpRuns } from "./runs.js";
import { createMcpServer } from "./server.js";

export interface ServerInfo {
  version: string;
}

/** Serves one client on stdin/stdout until the client closes stdin. Nothing else may write to stdout meanwhile. */
export async function serveStdio(runs: McpRuns, info: ServerInfo): Promise<void> {
  const server = createMcpServer(runs, info);
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = resolve;
  });
  await server.connect(new StdioServerTransport());
  process.stdin.once("end", () => void server.close());
  await closed;
}

export interface HttpServer {
  /** Where clients connect, e.g. http://127.0.0.1:3000/mcp. */
  url: string;
  /** False when it listens beyond this machine: no Host check, and every request must carry the token. */
  loopback: boolean;
  close(): Promise<void>;
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1"]);

function jsonRpcError(res: ServerResponse, status: number, message: string): void {
  res
    .writeHead(status, { "content-type": "application/json" })
    .end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }));
}

/**
 * Whether the request carries `Authorization: Bearer <token>`. Both sides are hashed first, so the
 * comparison takes the same time whatever the length or the first wrong character of a guess.
 */
function carriesToken(req: IncomingMessage, token: string): boolean {
  const header = req.headers.authorization;
  const given = typeof header === "string" && header.startsWith("Bearer ") ? header.slice("Bearer ".length) : "";
  const digest = (text: string) => createHash("sha256").update(text).digest();
  return timingSafeEqual(digest(given), digest(token)) && given.length > 0;
}

/** A request body past this is refused: input files sent as content count, and the default bound on them is 16 MiB. */
export const MAX_REQUEST_BYTES = 64 * 1024 * 1024;

class TooLarge extends Error {}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of req) {
    bytes += (chunk as Buffer).length;
    if (bytes > MAX_REQUEST_BYTES) throw new TooLarge();
    chunks.push(chunk as Buffer);
  }
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

/**
 * Serves MCP over Streamable HTTP at `/mcp`: each client gets a session of its own (its own
 * transport and server), and all of them share the runs, the store and the sandboxes. On a
 * loopback address, requests must name that address as their Host, which stops a web page from
 * reaching the server through DNS rebinding. Beyond loopback a `token` is required: each call runs
 * programs here and spends the model budget, so a request without `Authorization: Bearer <token>`
 * is refused (401) before its body is read or any work is done.
 */
export async function serveHttp(
  runs: McpRuns,
  info: ServerInfo,
  options: { host: string; port: number; token?: string },
): Promise<HttpServer> {
  const { token } = options;
  if (!LOOPBACK.has(options.host) && !token) {
    throw new UsageError(
      `serving MCP on ${options.host}, beyond this machine, needs a bearer token: anyone who reaches the port could run programs here`,
    );
  }
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  let allowedHosts: string[] | undefined;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (new URL(req.url ?? "/", "http://localhost").pathname !== "/mcp") {
      res.writeHead(404).end();
      return;
    }
    if (token && !carriesToken(req, token)) {
      res.setHeader("www-authenticate", 'Bearer realm="selfheal"');
      return jsonRpcError(res, 401, "unauthorized: send Authorization: Bearer <token>");
    }
    const sessionId = req.headers["mcp-session-id"];
    let transport = typeof sessionId === "string" ? sessions.get(sessionId) : undefined;
    if (req.method !== "POST") {
      if (!transport) return jsonRpcError(res, 400, "no such session: initialize first");
      return transport.handleRequest(req, res);
    }
    let body: unknown;
    try {
      body = await readJson(req);
    } catch (error) {
      if (error instanceof TooLarge)
        return jsonRpcError(res, 413, `the request body is over ${MAX_REQUEST_BYTES} bytes`);
      return jsonRpcError(res, 400, "the request body is not JSON");
    }
    if (!transport) {
      if (sessionId !== undefined) return jsonRpcError(res, 404, `no such session: ${sessionId}`);
      if (!isInitializeRequest(body)) return jsonRpcError(res, 400, "no session: the first request must be initialize");
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (id) => void sessions.set(id, created),
        ...(allowedHosts ? { enableDnsRebindingProtection: true, allowedHosts } : {}),
      });
      created.onclose = () => {
        if (created.sessionId) sessions.delete(created.sessionId);
      };
      await createMcpServer(runs, info).connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res, body);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) jsonRpcError(res, 500, error instanceof Error ? error.message : String(error));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error) => reject(listenError(error, options.host, options.port)));
    server.listen(options.port, options.host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  if (LOOPBACK.has(options.host)) allowedHosts = [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`];
  const shown = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    url: `http://${shown}:${port}/mcp`,
    loopback: allowedHosts !== undefined,
    async close() {
      await Promise.all([...sessions.values()].map((transport) => transport.close()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Why the server could not listen, in one line that names the flag to change; any other error as it is. */
function listenError(error: NodeJS.ErrnoException, host: string, port: number): Error {
  const where = `${host.includes(":") ? `[${host}]` : host}:${port}`;
  const reasons: Record<string, string> = {
    EADDRINUSE: `${where} is in use: choose another --port (0 takes any free one)`,
    EACCES: `${where} needs privileges this process lacks: choose a --port above 1023`,
    EADDRNOTAVAIL: `${host} is not an address of this machine: choose another --host`,
    ENOTFOUND: `${host} is not an address or a name this machine resolves: choose another --host`,
    EAI_AGAIN: `${host} could not be resolved: choose another --host`,
  };
  const reason = error.code ? reasons[error.code] : undefined;
  return reason ? new UsageError(`cannot serve MCP over HTTP: ${reason}`) : error;
}
