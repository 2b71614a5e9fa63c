import { once } from "node:events";
import { existsSync } from "node:fs";
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from "node:http";
import { connect, createServer as createTcpServer, type Socket, type Server as TcpServer } from "node:net";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import { afterEach, describe, expect, it } from "vitest";
import { type AllowHostInput, parseAllowlist } from "../../src/core/allowlist.js";
import {
  type EgressProxy,
  type EgressProxyOptions,
  MAX_RECORDED_REFUSALS,
  startEgressProxy,
} from "../../src/sandbox/egress/proxy.js";
import { createRunCertificateAuthority } from "../../src/sandbox/egress/run-ca.js";
import { startEgressTestServers, TEST_CSV } from "../helpers/egress-servers.js";
import { scratchDir } from "../helpers/scratch.js";

/**
 * Every server here listens on 127.0.0.1 and every name is made up: the proxy's resolver is
 * replaced by NAMES, so nothing leaves this machine. `allowPrivateAddresses` is on wherever a test
 * means to reach these loopback servers, and off where the refusal of loopback is the point.
 */
const NAMES: Record<string, string[]> = {
  "data.test": ["127.0.0.1"],
  "other.test": ["127.0.0.1"],
  "mapped.test": ["::ffff:127.0.0.1"],
};

async function resolveTestName(host: string): Promise<string[]> {
  const addresses = NAMES[host];
  if (addresses) return addresses;
  throw Object.assign(new Error(`no test name ${host}`), { code: "ENOTFOUND" });
}

const opened: { close(): unknown }[] = [];

afterEach(async () => {
  for (const thing of opened.splice(0).reverse()) await thing.close();
});

async function proxyFor(
  allowHosts: AllowHostInput[],
  options: Partial<Omit<EgressProxyOptions, "allowlist">> = {},
): Promise<EgressProxy> {
  const parsed = parseAllowlist(allowHosts);
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const proxy = await startEgressProxy({
    allowlist: parsed.allowlist,
    maxConnections: 100,
    maxBytes: 1_000_000,
    allowPrivateAddresses: true,
    resolve: resolveTestName,
    ...options,
  });
  opened.push(proxy);
  return proxy;
}

/** An HTTP server on 127.0.0.1 that answers each request with `answer`, and counts the requests it got. */
async function httpServer(
  answer: (
    path: string,
    headers: IncomingHttpHeaders,
    body: string,
  ) => { status?: number; headers?: Record<string, string>; body: string },
): Promise<{ port: number; requests: () => number; server: Server }> {
  let requests = 0;
  const server = createServer((request, response) => {
    requests += 1;
    let body = "";
    request.setEncoding("utf8");
    request.on("data", (chunk) => {
      body += chunk;
    });
    request.on("end", () => {
      const reply = answer(request.url ?? "", request.headers, body);
      response.writeHead(reply.status ?? 200, reply.headers ?? {});
      response.end(reply.body);
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  opened.push({ close: () => new Promise((resolve) => server.close(resolve)) });
  return { port: (server.address() as { port: number }).port, requests: () => requests, server };
}

/** A TCP server on 127.0.0.1 that sends back whatever it receives. */
async function echoServer(): Promise<{ port: number; server: TcpServer }> {
  const sockets = new Set<Socket>();
  const server = createTcpServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => undefined);
    socket.pipe(socket);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  opened.push({
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(resolve));
    },
  });
  return { port: (server.address() as { port: number }).port, server };
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A plain request through the proxy, as a program's HTTP client sends one: the absolute URI, and
 * the Host header it names (Node's client would otherwise send the proxy's own address as Host).
 */
function getThrough(
  proxy: EgressProxy,
  url: string,
  options: { method?: string; body?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const where =
    proxy.address.kind === "tcp"
      ? { host: proxy.address.host, port: proxy.address.port }
      : { socketPath: proxy.address.path };
  return new Promise((resolve, reject) => {
    const request = httpRequest({
      ...where,
      method: options.method ?? "GET",
      path: url,
      headers: { host: new URL(url).host, ...options.headers },
      agent: false,
    });
    request.on("error", reject);
    request.on("response", (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk) => {
        body += chunk;
      });
      response.on("error", reject);
      // An answer cut short (the byte limit) ends without completing.
      response.on("close", () => {
        if (!response.complete) reject(new Error("the answer was cut short"));
      });
      response.on("end", () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
    });
    request.end(options.body);
  });
}

/** A CONNECT through the proxy: its status, and for a 200 the tunnel's socket; for a refusal the body. */
function connectThrough(
  proxy: EgressProxy,
  authority: string,
): Promise<{ status: number; socket: Socket; body: string }> {
  if (proxy.address.kind !== "tcp") throw new Error("the tests CONNECT over TCP");
  const { host, port } = proxy.address;
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host, port, method: "CONNECT", path: authority, agent: false });
    request.on("error", reject);
    request.on("connect", (response, socket: Socket, head: Buffer) => {
      const status = response.statusCode ?? 0;
      if (status === 200) return resolve({ status, socket, body: "" });
      let body = head.toString("utf8");
      socket.setEncoding("utf8");
      socket.on("data", (chunk) => {
        body += chunk;
      });
      socket.on("end", () => resolve({ status, socket, body }));
    });
    request.end();
  });
}

/** Writes `text` into a tunnel and reads back as many bytes. */
async function echoOver(socket: Socket, text: string): Promise<string> {
  socket.write(text);
  let received = "";
  while (received.length < text.length) {
    const [chunk] = (await once(socket, "data")) as [Buffer];
    received += chunk.toString("utf8");
  }
  return received;
}

describe("the egress proxy, for a listed host", () => {
  it("forwards a plain request and its answer, with the Host the program named, and records the bytes", async () => {
    const server = await httpServer((path, headers, body) => ({
      body: `${path} host=${headers.host} proxy-connection=${headers["proxy-connection"]} got=${body}`,
    }));
    const proxy = await proxyFor([`data.test:${server.port}`]);
    const answer = await getThrough(proxy, `http://data.test:${server.port}/hello?x=1`, {
      method: "POST",
      body: "ping",
      headers: { "proxy-connection": "keep-alive" },
    });
    const expectedBody = `/hello?x=1 host=data.test:${server.port} proxy-connection=undefined got=ping`;
    expect(answer).toMatchObject({ status: 200, body: expectedBody });
    expect(proxy.connections()).toEqual([
      {
        host: "data.test",
        port: server.port,
        method: "HTTP",
        allowed: true,
        bytesUp: 4,
        bytesDown: Buffer.byteLength(expectedBody),
      },
    ]);
  });

  it("opens a CONNECT tunnel and carries bytes both ways, recording them", async () => {
    const echo = await echoServer();
    const proxy = await proxyFor([`data.test:${echo.port}`]);
    const tunnel = await connectThrough(proxy, `data.test:${echo.port}`);
    expect(tunnel.status).toBe(200);
    expect(await echoOver(tunnel.socket, "hello tunnel")).toBe("hello tunnel");
    tunnel.socket.end();
    await once(tunnel.socket, "close");
    expect(proxy.connections()).toEqual([
      { host: "data.test", port: echo.port, method: "CONNECT", allowed: true, bytesUp: 12, bytesDown: 12 },
    ]);
  });

  it("listens on a unix socket path too, and removes it on close", async () => {
    const server = await httpServer(() => ({ body: "over a unix socket" }));
    const path = join(scratchDir("egress"), "proxy.sock");
    const proxy = await proxyFor([`data.test:${server.port}`], { listen: { path } });
    expect(proxy.address).toEqual({ kind: "unix", path });
    expect(await getThrough(proxy, `http://data.test:${server.port}/`)).toMatchObject({
      status: 200,
      body: "over a unix socket",
    });
    await proxy.close();
    expect(existsSync(path)).toBe(false);
  });
});

describe("the egress proxy refuses", () => {
  it("a name that is not on the list, plain or CONNECT, and records it; the server hears nothing", async () => {
    const server = await httpServer(() => ({ body: "should not be reached" }));
    const proxy = await proxyFor([`data.test:${server.port}`]);
    const plain = await getThrough(proxy, `http://other.test:${server.port}/`);
    expect(plain).toMatchObject({ status: 403, body: "other.test is not on the allowlist\n" });
    const tunnel = await connectThrough(proxy, `other.test:${server.port}`);
    expect(tunnel).toMatchObject({ status: 403, body: "other.test is not on the allowlist\n" });
    expect(server.requests()).toBe(0);
    const refused = { host: "other.test", port: server.port, allowed: false, bytesUp: 0, bytesDown: 0 };
    const reason = "other.test is not on the allowlist";
    expect(proxy.connections()).toEqual([
      { ...refused, method: "HTTP", reason },
      { ...refused, method: "CONNECT", reason },
    ]);
  });

  it("an IP literal that is not itself listed, in any spelling, while a listed one passes", async () => {
    const server = await httpServer(() => ({ body: "by address" }));
    const proxy = await proxyFor([`data.test:${server.port}`]);
    expect(await getThrough(proxy, `http://127.0.0.1:${server.port}/`)).toMatchObject({
      status: 403,
      body: "the IP address 127.0.0.1 is not on the allowlist (only a listed address is)\n",
    });
    // 2130706433 is 127.0.0.1 as one number, which URL parsers accept.
    expect(await connectThrough(proxy, `2130706433:${server.port}`)).toMatchObject({
      status: 403,
      body: "the IP address 127.0.0.1 is not on the allowlist (only a listed address is)\n",
    });
    expect(server.requests()).toBe(0);

    const listed = await proxyFor([`127.0.0.1:${server.port}`]);
    expect(await getThrough(listed, `http://127.0.0.1:${server.port}/`)).toMatchObject({
      status: 200,
      body: "by address",
    });
  });

  it("a listed name on a port the list does not give it", async () => {
    const server = await httpServer(() => ({ body: "should not be reached" }));
    const proxy = await proxyFor([`data.test:${server.port}`, "other.test"]);
    const elsewhere = server.port === 65_535 ? 65_534 : server.port + 1;
    expect(await getThrough(proxy, `http://data.test:${elsewhere}/`)).toMatchObject({
      status: 403,
      body: `data.test is on the allowlist, but not port ${elsewhere}\n`,
    });
    // Without a port an entry allows 80 and 443 only.
    expect(await connectThrough(proxy, `other.test:${server.port}`)).toMatchObject({
      status: 403,
      body: `other.test is on the allowlist, but not port ${server.port}\n`,
    });
    expect(server.requests()).toBe(0);
    expect(proxy.connections().map((record) => [record.host, record.allowed])).toEqual([
      ["data.test", false],
      ["other.test", false],
    ]);
  });

  it("a plain request whose Host header names another host than its URI", async () => {
    const server = await httpServer(() => ({ body: "should not be reached" }));
    const proxy = await proxyFor([`data.test:${server.port}`, `other.test:${server.port}`]);
    const answer = await getThrough(proxy, `http://data.test:${server.port}/`, {
      headers: { host: `other.test:${server.port}` },
    });
    expect(answer).toMatchObject({
      status: 403,
      body: `the Host header "other.test:${server.port}" differs from the request's host data.test:${server.port}\n`,
    });
    expect(server.requests()).toBe(0);
    expect(proxy.connections()).toMatchObject([{ host: "data.test", method: "HTTP", allowed: false }]);
  });

  it("a listed name that resolves to loopback, unless allowPrivateAddresses, an IPv4-mapped address included", async () => {
    const server = await httpServer(() => ({ body: "loopback" }));
    const listed = [`data.test:${server.port}`, `mapped.test:${server.port}`];
    const strict = await proxyFor(listed, { allowPrivateAddresses: false });
    expect(await getThrough(strict, `http://data.test:${server.port}/`)).toMatchObject({
      status: 403,
      body: "data.test resolves to a private address (127.0.0.1), which the proxy does not reach\n",
    });
    expect(await connectThrough(strict, `mapped.test:${server.port}`)).toMatchObject({
      status: 403,
      body: "mapped.test resolves to a private address (::ffff:127.0.0.1), which the proxy does not reach\n",
    });
    expect(server.requests()).toBe(0);
    expect(strict.connections().map((record) => record.allowed)).toEqual([false, false]);

    const lenient = await proxyFor(listed, { allowPrivateAddresses: true });
    expect(await getThrough(lenient, `http://data.test:${server.port}/`)).toMatchObject({
      status: 200,
      body: "loopback",
    });
  });

  it("the request a redirect to an unlisted host leads to: the redirect itself passes unchanged", async () => {
    const server = await httpServer((path, headers) =>
      path === "/start"
        ? { status: 302, headers: { location: `http://${headers.host?.replace("data", "other")}/next` }, body: "" }
        : { body: "the unlisted page" },
    );
    const port = server.port;
    const proxy = await proxyFor([`data.test:${port}`]);
    const first = await getThrough(proxy, `http://data.test:${port}/start`);
    expect(first.status).toBe(302);
    expect(first.headers.location).toBe(`http://other.test:${port}/next`);
    // The client follows the redirect as a new request, which the list judges afresh.
    const second = await getThrough(proxy, first.headers.location!);
    expect(second).toMatchObject({ status: 403, body: "other.test is not on the allowlist\n" });
    expect(server.requests()).toBe(1);
    expect(proxy.connections().map((record) => [record.host, record.allowed])).toEqual([
      ["data.test", true],
      ["other.test", false],
    ]);
  });
});

describe("the egress proxy's own resolver", () => {
  it("is the system's by default, and its loopback answer for localhost is refused", async () => {
    const server = await httpServer(() => ({ body: "should not be reached" }));
    const proxy = await proxyFor([`localhost:${server.port}`], { allowPrivateAddresses: false, resolve: undefined });
    const answer = await getThrough(proxy, `http://localhost:${server.port}/`);
    expect(answer.status).toBe(403);
    expect(answer.body).toMatch(/^localhost resolves to a private address \((127\.0\.0\.1|::1)\), which the proxy/);
    expect(server.requests()).toBe(0);
  });

  it("answers 502 for a listed name that does not resolve, and records it refused", async () => {
    const proxy = await proxyFor(["nowhere.test:8080"]);
    expect(await getThrough(proxy, "http://nowhere.test:8080/")).toMatchObject({
      status: 502,
      body: "could not resolve nowhere.test: ENOTFOUND\n",
    });
    expect(proxy.connections()).toMatchObject([{ host: "nowhere.test", allowed: false }]);
  });

  it("never hands a name on to connect, whatever the resolver answers", async () => {
    const server = await httpServer(() => ({ body: "should not be reached" }));
    const proxy = await proxyFor([`data.test:${server.port}`], { resolve: async () => ["localhost"] });
    expect(await getThrough(proxy, `http://data.test:${server.port}/`)).toMatchObject({
      status: 502,
      body: "data.test has no address\n",
    });
    expect(server.requests()).toBe(0);
  });
});

describe("the egress proxy's limits", () => {
  it("refuse connections past maxConnections", async () => {
    const server = await httpServer(() => ({ body: "ok" }));
    const proxy = await proxyFor([`data.test:${server.port}`], { maxConnections: 2 });
    const url = `http://data.test:${server.port}/`;
    expect((await getThrough(proxy, url)).status).toBe(200);
    expect((await getThrough(proxy, url)).status).toBe(200);
    expect(await getThrough(proxy, url)).toMatchObject({
      status: 403,
      body: "the proxy's connection limit (2) is reached\n",
    });
    expect(server.requests()).toBe(2);
    expect(proxy.connections().map((record) => [record.allowed, record.reason])).toEqual([
      [true, undefined],
      [true, undefined],
      [false, "the proxy's connection limit (2) is reached"],
    ]);
  });

  it("cut a tunnel that would pass maxBytes, and refuse new connections after it", async () => {
    const echo = await echoServer();
    const proxy = await proxyFor([`data.test:${echo.port}`], { maxBytes: 10 });
    const tunnel = await connectThrough(proxy, `data.test:${echo.port}`);
    expect(await echoOver(tunnel.socket, "1234")).toBe("1234");
    const closed = once(tunnel.socket, "close");
    tunnel.socket.write("56789");
    await closed;
    expect(proxy.connections()).toEqual([
      {
        host: "data.test",
        port: echo.port,
        method: "CONNECT",
        allowed: true,
        reason: "cut at the proxy's byte limit (10 bytes)",
        bytesUp: 4,
        bytesDown: 4,
      },
    ]);
    expect(await connectThrough(proxy, `data.test:${echo.port}`)).toMatchObject({
      status: 403,
      body: "the proxy's byte limit (10 bytes) is reached\n",
    });
  });

  it("keep the records of refusals bounded, counting those past MAX_RECORDED_REFUSALS", async () => {
    const proxy = await proxyFor([]);
    const url = "http://other.test/";
    for (let batch = 0; batch < (MAX_RECORDED_REFUSALS + 10) / 10; batch += 1) {
      await Promise.all(Array.from({ length: 10 }, () => getThrough(proxy, url)));
    }
    expect(proxy.connections().length).toBe(MAX_RECORDED_REFUSALS);
    expect(proxy.unrecordedRefusals()).toBe(10);
  });

  it("cut a plain answer that would pass maxBytes", async () => {
    const server = await httpServer(() => ({ body: "x".repeat(5_000) }));
    const proxy = await proxyFor([`data.test:${server.port}`], { maxBytes: 1_000 });
    await expect(getThrough(proxy, `http://data.test:${server.port}/`)).rejects.toThrow();
    const [record] = proxy.connections();
    expect(record).toMatchObject({ allowed: true, reason: "cut at the proxy's byte limit (1000 bytes)" });
    expect(record!.bytesDown).toBeLessThan(1_000);
  });
});

describe("closing the egress proxy", () => {
  it("ends its open tunnels and requests, stops listening, and leaves no socket open", async () => {
    const tcpHandles = () =>
      process.getActiveResourcesInfo().filter((kind) => kind === "TCPSocketWrap" || kind === "TCPServerWrap").length;
    const before = tcpHandles();
    const echo = await echoServer();
    let heldResponse: (() => void) | undefined;
    const stalled = createServer((_request, response) => {
      // Never answers until the test is over: the request is in flight when the proxy closes.
      heldResponse = () => response.destroy();
    });
    stalled.listen(0, "127.0.0.1");
    await once(stalled, "listening");
    const stalledPort = (stalled.address() as { port: number }).port;
    const proxy = await proxyFor([`data.test:${echo.port}`, `other.test:${stalledPort}`]);
    const tunnel = await connectThrough(proxy, `data.test:${echo.port}`);
    expect(await echoOver(tunnel.socket, "open")).toBe("open");
    const inFlight = getThrough(proxy, `http://other.test:${stalledPort}/`);
    const inFlightSettled = inFlight.then(
      () => "answered",
      () => "ended",
    );
    while (heldResponse === undefined) await new Promise((resolve) => setImmediate(resolve));

    const tunnelClosed = once(tunnel.socket, "close");
    await proxy.close();
    await tunnelClosed;
    expect(await inFlightSettled).toBe("ended");
    // The address it had now refuses: nothing listens there any more.
    await expect(getThrough(proxy, `http://data.test:${echo.port}/`)).rejects.toThrow(/ECONNREFUSED/);

    heldResponse();
    await new Promise((resolve) => stalled.close(resolve));
    for (const thing of opened.splice(0).reverse()) await thing.close();
    // A closed socket leaves the list of handles on a later turn of the event loop, not a later time.
    for (let turn = 0; turn < 100 && tcpHandles() !== before; turn += 1) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(tcpHandles()).toBe(before);
  });
});

describe("the egress proxy ending a tunnel's TLS (tls: terminate)", () => {
  /** The test servers and a proxy that ends the TLS of tunnels to secure.test, adding `headers` inside. */
  const terminatingProxy = async (headers?: Record<string, string>) => {
    const servers = await startEgressTestServers();
    opened.push(servers);
    const ca = createRunCertificateAuthority();
    const port = servers.httpsPort;
    const parsed = parseAllowlist([{ host: `secure.test:${port}`, tls: "terminate" }]);
    if (!parsed.ok) throw new Error(parsed.errors.join("; "));
    const proxy = await startEgressProxy({
      allowlist: parsed.allowlist.map((entry) => (headers ? { ...entry, headers } : entry)),
      maxConnections: 100,
      maxBytes: 1_000_000,
      allowPrivateAddresses: true,
      resolve: async () => ["127.0.0.1"],
      tls: { issue: (host) => ca.issue(host), trusted: [servers.certificate] },
    });
    opened.push(proxy);
    return { servers, ca, port, proxy, address: proxy.address as { port: number } };
  };

  it("adds the entry's headers inside, and refuses a request whose Host is not the tunnel's host", async () => {
    // The headers as the run's proxy gets them: read from the environment (run/egress.ts).
    const { servers, ca, port, address } = await terminatingProxy({ Authorization: "Bearer token-1" });
    /** One request through a CONNECT tunnel to secure.test, with TLS to the proxy's certificate for it. */
    const through = async (host: string): Promise<[number, string]> => {
      const tunnel = connect(address.port, "127.0.0.1");
      tunnel.write(`CONNECT secure.test:${port} HTTP/1.1\r\nHost: secure.test:${port}\r\n\r\n`);
      const [head] = (await once(tunnel, "data")) as [Buffer];
      expect(head.toString()).toBe("HTTP/1.1 200 Connection Established\r\n\r\n");
      const secure = tlsConnect({ socket: tunnel, servername: "secure.test", ca: ca.certificate });
      await once(secure, "secureConnect");
      secure.write(`GET /x.csv HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      const chunks: Buffer[] = [];
      for await (const chunk of secure) chunks.push(chunk as Buffer);
      const text = Buffer.concat(chunks).toString();
      return [Number(text.split(" ")[1]), text.slice(text.indexOf("\r\n\r\n") + 4)];
    };
    const before = servers.seen.length;
    // The answer's body comes chunked: the CSV between the chunk sizes.
    expect(await through(`secure.test:${port}`)).toEqual([200, expect.stringContaining(TEST_CSV)]);
    expect(await through("other.test")).toEqual([
      403,
      expect.stringContaining(
        `the request's Host header (other.test) is not the tunnel's host (secure.test:${port})\n`,
      ),
    ]);
    expect(servers.seen.slice(before).map((headers) => headers.authorization)).toEqual(["Bearer token-1"]);
  });

  it("records why a tunnel's TLS handshake failed, and no reason for one that succeeded", async () => {
    const { ca, port, proxy, address } = await terminatingProxy();
    // Plain text where the ClientHello should be: the proxy's end of the handshake fails.
    const broken = connect(address.port, "127.0.0.1");
    broken.write(`CONNECT secure.test:${port} HTTP/1.1\r\nHost: secure.test:${port}\r\n\r\n`);
    await once(broken, "data");
    broken.write("GET / HTTP/1.1\r\nHost: secure.test\r\n\r\n");
    broken.resume();
    await once(broken, "close");
    const tunnel = connect(address.port, "127.0.0.1");
    tunnel.write(`CONNECT secure.test:${port} HTTP/1.1\r\nHost: secure.test:${port}\r\n\r\n`);
    await once(tunnel, "data");
    const secure = tlsConnect({ socket: tunnel, servername: "secure.test", ca: ca.certificate });
    await once(secure, "secureConnect");
    secure.end();
    await once(secure, "close");
    expect(proxy.connections().map(({ reason }) => reason)).toEqual([
      expect.stringMatching(/^the TLS handshake with the proxy failed: \S+/),
      undefined,
    ]);
  });

  it("keeps the program's TLS connection open for its next request, and leaves its close to the program", async () => {
    // A proxy that closed the connection after each answer met the program's own close_notify on
    // a closed socket: the reset could reach Node's client before it had read the answer.
    const { ca, port, proxy, address } = await terminatingProxy();
    const tunnel = connect(address.port, "127.0.0.1");
    tunnel.write(`CONNECT secure.test:${port} HTTP/1.1\r\nHost: secure.test:${port}\r\n\r\n`);
    await once(tunnel, "data");
    const secure = tlsConnect({ socket: tunnel, servername: "secure.test", ca: ca.certificate });
    await once(secure, "secureConnect");
    let received = "";
    let closed = false;
    secure.on("data", (chunk: Buffer) => {
      received += chunk.toString();
    });
    secure.on("close", () => {
      closed = true;
    });
    /** One request on the open connection: its answer, which is chunked, ends with the empty chunk. */
    const ask = async (): Promise<string> => {
      received = "";
      secure.write(`GET /x.csv HTTP/1.1\r\nHost: secure.test:${port}\r\n\r\n`);
      while (!received.endsWith("\r\n0\r\n\r\n")) await once(secure, "data");
      return received;
    };
    const first = await ask();
    expect(first.split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
    expect(first.toLowerCase()).not.toContain("connection: close");
    expect(first).toContain(TEST_CSV);
    expect(await ask()).toContain(TEST_CSV);
    expect(closed).toBe(false);
    expect(proxy.connections().map(({ method, host }) => [method, host])).toEqual([["CONNECT", "secure.test"]]);
    secure.end();
    await once(secure, "close");
  });
});
