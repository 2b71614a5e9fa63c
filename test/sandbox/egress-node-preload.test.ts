import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { readFileSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createServer as createTcpServer } from "node:net";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parseAllowlist } from "../../src/core/allowlist.js";
import { NODE_EGRESS_PRELOAD } from "../../src/sandbox/egress/node-preload.js";
import { type EgressProxy, startEgressProxy } from "../../src/sandbox/egress/proxy.js";
import { scratchDir } from "../helpers/scratch.js";

/**
 * Child `node` processes load the preload as a sandboxed run's do (NODE_OPTIONS) and reach two
 * servers on 127.0.0.1 under made-up names (data.test over HTTP, secure.test over HTTPS with a
 * self-signed certificate) only through the proxy, whose resolver maps the names: nothing leaves
 * this machine. other.test maps to the same servers but is not on the list.
 */
const NAMES: Record<string, string[]> = {
  "data.test": ["127.0.0.1"],
  "secure.test": ["127.0.0.1"],
  "other.test": ["127.0.0.1"],
};

const CSV = "city,people\nLyon,522250\nNantes,323204\n";
/** A body larger than every buffer on the way, so backpressure has to work for it to arrive whole. */
const BIG = Buffer.alloc(4 * 1024 * 1024, "0123456789abcdef");

let dir = "";
let preloadFile = "";
let certFile = "";
let httpPort = 0;
let httpsPort = 0;
const servers: Server[] = [];
const proxies: EgressProxy[] = [];

/** What both servers answer, by path. */
function answer(request: IncomingMessage, response: ServerResponse): void {
  const url = new URL(request.url ?? "/", "http://server");
  const chunks: Buffer[] = [];
  request.on("data", (chunk: Buffer) => chunks.push(chunk));
  request.on("end", () => {
    if (url.pathname === "/x.csv") {
      response.writeHead(200, { "content-type": "text/csv" });
      response.end(CSV);
    } else if (url.pathname === "/echo") {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(
        JSON.stringify({
          method: request.method,
          path: request.url,
          host: request.headers.host,
          contentType: request.headers["content-type"] ?? null,
          body: Buffer.concat(chunks).toString("utf8"),
        }),
      );
    } else if (url.pathname === "/redirect") {
      response.writeHead(302, { location: url.searchParams.get("to") ?? "/" });
      response.end();
    } else if (url.pathname === "/big") {
      response.writeHead(200, { "content-type": "application/octet-stream" });
      response.end(BIG);
    } else if (url.pathname === "/hang") {
      // Half an answer, then nothing: the client has to abort.
      response.writeHead(200, { "content-type": "text/plain" });
      response.write("partial");
    } else {
      response.writeHead(404);
      response.end("no such path\n");
    }
  });
}

async function listen(server: Server): Promise<number> {
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  servers.push(server);
  return (server.address() as { port: number }).port;
}

beforeAll(async () => {
  dir = scratchDir("egress-preload");
  preloadFile = join(dir, "egress-preload.cjs");
  writeFileSync(preloadFile, NODE_EGRESS_PRELOAD);
  certFile = join(dir, "secure.test.crt");
  const keyFile = join(dir, "secure.test.key");
  execFileSync(
    "openssl",
    [
      ...["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"],
      ...["-subj", "/CN=secure.test", "-addext", "subjectAltName=DNS:secure.test"],
      ...["-keyout", keyFile, "-out", certFile],
    ],
    { stdio: "ignore" },
  );
  httpPort = await listen(createHttpServer(answer));
  httpsPort = await listen(createHttpsServer({ key: readFileSync(keyFile), cert: readFileSync(certFile) }, answer));
});

afterAll(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

afterEach(async () => {
  for (const proxy of proxies.splice(0)) await proxy.close();
});

/** The proxy a run would get: the two servers listed, on a unix socket unless `tcp`. */
async function startProxy(listen: "unix" | "tcp" = "unix"): Promise<EgressProxy> {
  const parsed = parseAllowlist([`data.test:${httpPort}`, `secure.test:${httpsPort}`]);
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const proxy = await startEgressProxy({
    allowlist: parsed.allowlist,
    listen: listen === "unix" ? { path: join(scratchDir("egress-socket"), "proxy.sock") } : { port: 0 },
    maxConnections: 100,
    maxBytes: 100_000_000,
    allowPrivateAddresses: true,
    resolve: async (host) => {
      const addresses = NAMES[host];
      if (addresses) return addresses;
      throw Object.assign(new Error(`no test name ${host}`), { code: "ENOTFOUND" });
    },
  });
  proxies.push(proxy);
  return proxy;
}

/** A port nothing listens on right now, for the relay (3128 would collide between parallel tests). */
async function freePort(): Promise<number> {
  const server = createTcpServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The environment a sandboxed Node process gets: the socket, the proxy variables at the relay's port, the preload. */
async function sandboxEnv(proxy: EgressProxy): Promise<Record<string, string>> {
  if (proxy.address.kind !== "unix") throw new Error("a sandbox reaches the proxy by its unix socket");
  const relay = `http://127.0.0.1:${await freePort()}`;
  return {
    SELFHEAL_EGRESS_SOCKET: proxy.address.path,
    HTTP_PROXY: relay,
    HTTPS_PROXY: relay,
    http_proxy: relay,
    https_proxy: relay,
    NODE_OPTIONS: `--require=${preloadFile}`,
    NODE_EXTRA_CA_CERTS: certFile,
  };
}

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `source` as an ES module in a child `node` with only `env` (and PATH, TMPDIR) set. */
async function runNode(source: string, env: Record<string, string>): Promise<Finished> {
  const file = join(scratchDir("egress-program"), "main.mjs");
  writeFileSync(file, source);
  const child = spawn(process.execPath, [file], {
    env: { PATH: process.env.PATH ?? "", TMPDIR: process.env.TMPDIR ?? "/tmp", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr.setEncoding("utf8").on("data", (chunk) => {
    stderr += chunk;
  });
  const [code] = await once(child, "close");
  return { code, stdout, stderr };
}

/** Runs `source`, which prints one JSON value; a clean exit with nothing on stderr, and that value. */
async function runJson(source: string, env: Record<string, string>): Promise<unknown> {
  const finished = await runNode(source, env);
  expect(finished).toMatchObject({ code: 0, stderr: "" });
  return JSON.parse(finished.stdout);
}

/** Module source the programs share: reading a whole answer from http.get/https.get. */
const GET_HELPER = `
import http from "node:http";
import https from "node:https";
const get = (module, url) => new Promise((resolve) => {
  module.get(url, (response) => {
    let body = "";
    response.setEncoding("utf8");
    response.on("data", (chunk) => { body += chunk; });
    response.on("end", () => resolve({ status: response.statusCode, body }));
  }).on("error", (error) => resolve({ error: error.message }));
});
const failure = (error) => ({ name: error.name, message: error.message, cause: error.cause?.message ?? null });
`;

const records = (proxy: EgressProxy) =>
  proxy.connections().map(({ host, port, method, allowed, reason }) => ({ host, port, method, allowed, reason }));

const notListed = (host: string) => `${host} is not on the allowlist`;

describe("the Node egress preload", () => {
  it("fetches a plain http URL through the proxy, the body exactly what the server sent", async () => {
    const proxy = await startProxy();
    const result = await runJson(
      `const response = await fetch("http://data.test:${httpPort}/x.csv");
      console.log(JSON.stringify({ status: response.status, type: response.headers.get("content-type"), body: await response.text() }));`,
      await sandboxEnv(proxy),
    );
    expect(result).toEqual({ status: 200, type: "text/csv", body: CSV });
    expect(records(proxy)).toEqual([
      { host: "data.test", port: httpPort, method: "HTTP", allowed: true, reason: undefined },
    ]);
  });

  it("fetches an https URL through a CONNECT tunnel, the server's certificate checked", async () => {
    const proxy = await startProxy();
    const result = await runJson(
      `const response = await fetch("https://secure.test:${httpsPort}/x.csv");
      console.log(JSON.stringify({ status: response.status, body: await response.text() }));`,
      await sandboxEnv(proxy),
    );
    expect(result).toEqual({ status: 200, body: CSV });
    expect(records(proxy)).toEqual([
      { host: "secure.test", port: httpsPort, method: "CONNECT", allowed: true, reason: undefined },
    ]);
  });

  it("posts a JSON body that reaches the server whole, over http and https", async () => {
    const proxy = await startProxy();
    const result = await runJson(
      `const post = async (url) => (await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ rows: [1, 2, 3], name: "élan" }),
      })).json();
      console.log(JSON.stringify([await post("http://data.test:${httpPort}/echo?q=1"), await post("https://secure.test:${httpsPort}/echo")]));`,
      await sandboxEnv(proxy),
    );
    const body = JSON.stringify({ rows: [1, 2, 3], name: "élan" });
    expect(result).toEqual([
      { method: "POST", path: "/echo?q=1", host: `data.test:${httpPort}`, contentType: "application/json", body },
      { method: "POST", path: "/echo", host: `secure.test:${httpsPort}`, contentType: "application/json", body },
    ]);
  });

  it("sends the other bodies fetch takes: URLSearchParams, FormData, a Blob and a stream", async () => {
    const proxy = await startProxy();
    const result = await runJson(
      `const url = "http://data.test:${httpPort}/echo";
      const echo = async (init) => (await fetch(url, { method: "POST", ...init })).json();
      const form = new FormData();
      form.set("city", "Lyon");
      form.set("file", new Blob(["a,b\\n1,2\\n"], { type: "text/csv" }), "t.csv");
      const formEcho = await echo({ body: form });
      const parsed = await new Response(formEcho.body, { headers: { "content-type": formEcho.contentType } }).formData();
      const stream = new ReadableStream({
        start(controller) {
          for (const part of ["one ", "two ", "three"]) controller.enqueue(new TextEncoder().encode(part));
          controller.close();
        },
      });
      console.log(JSON.stringify({
        params: await echo({ body: new URLSearchParams({ a: "1", b: "x y" }) }),
        form: { city: parsed.get("city"), file: await parsed.get("file").text() },
        blob: await echo({ body: new Blob(["blob body"], { type: "text/plain" }) }),
        stream: await echo({ body: stream, duplex: "half" }),
      }));`,
      await sandboxEnv(proxy),
    );
    const echoed = (contentType: string | null, body: string) => ({
      method: "POST",
      path: "/echo",
      host: `data.test:${httpPort}`,
      contentType,
      body,
    });
    expect(result).toEqual({
      params: echoed("application/x-www-form-urlencoded;charset=UTF-8", "a=1&b=x+y"),
      form: { city: "Lyon", file: "a,b\n1,2\n" },
      blob: echoed("text/plain", "blob body"),
      stream: echoed(null, "one two three"),
    });
  });

  it("brings a large answer whole through fetch and http.get", async () => {
    const proxy = await startProxy();
    const result = await runJson(
      `import { createHash } from "node:crypto";
      import http from "node:http";
      const digest = (bytes) => createHash("sha256").update(bytes).digest("hex");
      const fetched = Buffer.from(await (await fetch("http://data.test:${httpPort}/big")).arrayBuffer());
      // A slow reader: fetch's stream fills, the dispatcher pauses the answer, then resumes it.
      const reader = (await fetch("https://secure.test:${httpsPort}/big")).body.getReader();
      const parts = [];
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        parts.push(value);
        await new Promise((resolve) => setImmediate(resolve));
      }
      const slow = Buffer.concat(parts);
      const got = await new Promise((resolve) => http.get("http://data.test:${httpPort}/big", (response) => {
        const chunks = [];
        response.on("data", (chunk) => chunks.push(chunk));
        response.on("end", () => resolve(Buffer.concat(chunks)));
      }));
      console.log(JSON.stringify([fetched, slow, got].map((bytes) => [bytes.length, digest(bytes)])));`,
      await sandboxEnv(proxy),
    );
    const expected = [BIG.length, createHash("sha256").update(BIG).digest("hex")];
    expect(result).toEqual([expected, expected, expected]);
  });

  it("sends http.get and https.get with the default agent through the proxy", async () => {
    const proxy = await startProxy();
    const result = await runJson(
      `${GET_HELPER}
      console.log(JSON.stringify([
        await get(http, "http://data.test:${httpPort}/x.csv"),
        await get(https, "https://secure.test:${httpsPort}/x.csv"),
        await get(http, { host: "data.test", port: ${httpPort}, path: "/echo", agent: undefined }),
        // agent: false makes a fresh agent of the default one's class; headers as an array write the head at once.
        await get(http, { host: "data.test", port: ${httpPort}, path: "/x.csv", agent: false }),
        await get(http, { host: "data.test", port: ${httpPort}, path: "/echo", headers: ["Host", "data.test:${httpPort}", "X-Array", "1"] }),
      ]));`,
      await sandboxEnv(proxy),
    );
    expect(result).toEqual([
      { status: 200, body: CSV },
      { status: 200, body: CSV },
      {
        status: 200,
        body: JSON.stringify({
          method: "GET",
          path: "/echo",
          host: `data.test:${httpPort}`,
          contentType: null,
          body: "",
        }),
      },
      { status: 200, body: CSV },
      {
        status: 200,
        body: JSON.stringify({
          method: "GET",
          path: "/echo",
          host: `data.test:${httpPort}`,
          contentType: null,
          body: "",
        }),
      },
    ]);
    expect(records(proxy).map(({ host, method, allowed }) => [host, method, allowed])).toEqual([
      ["data.test", "HTTP", true],
      ["secure.test", "CONNECT", true],
      ["data.test", "HTTP", true],
      ["data.test", "HTTP", true],
      ["data.test", "HTTP", true],
    ]);
  });

  it("gives an unlisted host the proxy's refusal: a 403 over http, an error naming it over https", async () => {
    const proxy = await startProxy();
    const result = await runJson(
      `${GET_HELPER}
      const plain = await fetch("http://other.test:${httpPort}/x.csv");
      const secure = await fetch("https://other.test:${httpsPort}/x.csv").then(() => "fetched", failure);
      console.log(JSON.stringify({
        fetch: { status: plain.status, body: await plain.text() },
        fetchHttps: secure,
        get: await get(http, "http://other.test:${httpPort}/x.csv"),
        getHttps: await get(https, "https://other.test:${httpsPort}/x.csv"),
      }));`,
      await sandboxEnv(proxy),
    );
    const refusedHttps = `selfheal egress: the proxy refused other.test:${httpsPort}: 403 Forbidden: ${notListed("other.test")}`;
    expect(result).toEqual({
      fetch: { status: 403, body: `${notListed("other.test")}\n` },
      fetchHttps: { name: "TypeError", message: "fetch failed", cause: refusedHttps },
      get: { status: 403, body: `${notListed("other.test")}\n` },
      getHttps: { error: refusedHttps },
    });
  });

  it("refuses the second hop of a redirect from a listed server to an unlisted host", async () => {
    const proxy = await startProxy();
    const target = `http://other.test:${httpPort}/x.csv`;
    const result = await runJson(
      `const response = await fetch("http://data.test:${httpPort}/redirect?to=" + encodeURIComponent(${JSON.stringify(target)}));
      console.log(JSON.stringify({ status: response.status, redirected: response.redirected, url: response.url, body: await response.text() }));`,
      await sandboxEnv(proxy),
    );
    expect(result).toEqual({ status: 403, redirected: true, url: target, body: `${notListed("other.test")}\n` });
    expect(records(proxy)).toEqual([
      { host: "data.test", port: httpPort, method: "HTTP", allowed: true, reason: undefined },
      { host: "other.test", port: httpPort, method: "HTTP", allowed: false, reason: notListed("other.test") },
    ]);
  });

  it("records every host a program asked for in the proxy's connections, allowed and refused", async () => {
    const proxy = await startProxy();
    await runJson(
      `${GET_HELPER}
      await fetch("http://data.test:${httpPort}/x.csv").then((response) => response.text());
      await fetch("https://secure.test:${httpsPort}/x.csv").then((response) => response.text());
      await fetch("http://other.test:${httpPort}/x.csv").then((response) => response.text());
      await fetch("https://other.test:${httpsPort}/x.csv").catch(() => undefined);
      await get(https, "https://data.test:${httpsPort}/x.csv");
      console.log("null");`,
      await sandboxEnv(proxy),
    );
    expect(records(proxy)).toEqual([
      { host: "data.test", port: httpPort, method: "HTTP", allowed: true, reason: undefined },
      { host: "secure.test", port: httpsPort, method: "CONNECT", allowed: true, reason: undefined },
      { host: "other.test", port: httpPort, method: "HTTP", allowed: false, reason: notListed("other.test") },
      { host: "other.test", port: httpsPort, method: "CONNECT", allowed: false, reason: notListed("other.test") },
      {
        host: "data.test",
        port: httpsPort,
        method: "CONNECT",
        allowed: false,
        reason: `data.test is on the allowlist, but not port ${httpsPort}`,
      },
    ]);
  });

  it("relays a child's TCP proxy requests (plain and CONNECT) to the socket, and a second preloaded process leaves the relay be", async () => {
    const proxy = await startProxy();
    const env = await sandboxEnv(proxy);
    const relayPort = Number(new URL(env.HTTP_PROXY ?? "").port);
    // What curl or Python does with HTTP_PROXY: TCP to the relay, an absolute-form request, or CONNECT then TLS.
    const tcpClient = `
      import http from "node:http";
      import tls from "node:tls";
      const plain = await new Promise((resolve, reject) => {
        http.request({ host: "127.0.0.1", port: ${relayPort}, path: "http://data.test:${httpPort}/x.csv",
          headers: { host: "data.test:${httpPort}" }, agent: false }, (response) => {
          let body = "";
          response.setEncoding("utf8").on("data", (chunk) => { body += chunk; });
          response.on("end", () => resolve({ status: response.statusCode, body }));
        }).on("error", reject).end();
      });
      const secure = await new Promise((resolve, reject) => {
        http.request({ host: "127.0.0.1", port: ${relayPort}, method: "CONNECT", path: "secure.test:${httpsPort}", agent: false })
          .on("connect", (response, socket) => {
            const session = tls.connect({ socket, servername: "secure.test" }, () => {
              // HTTP/1.0: the answer is the body as it is, then the end of the connection.
              session.end("GET /x.csv HTTP/1.0\\r\\nHost: secure.test:${httpsPort}\\r\\n\\r\\n");
            });
            let text = "";
            session.setEncoding("utf8").on("data", (chunk) => { text += chunk; });
            session.on("end", () => resolve({ status: response.statusCode, body: text.slice(text.indexOf("\\r\\n\\r\\n") + 4) }));
            session.on("error", reject);
          }).on("error", reject).end();
      });
      console.log(JSON.stringify({ plain, secure, preloaded: typeof globalThis[Symbol.for("selfheal.egress.preload")] }));
    `;
    const parent = `
      import { spawn } from "node:child_process";
      import { writeFileSync } from "node:fs";
      import { join } from "node:path";
      const run = (file, env) => new Promise((resolve) => {
        const child = spawn(process.execPath, [file], { env, stdio: ["ignore", "pipe", "pipe"] });
        let stdout = "";
        let stderr = "";
        child.stdout.setEncoding("utf8").on("data", (chunk) => { stdout += chunk; });
        child.stderr.setEncoding("utf8").on("data", (chunk) => { stderr += chunk; });
        child.on("close", (code) => resolve({ code, stdout: stdout.trim(), stderr }));
      });
      const client = join(${JSON.stringify(dir)}, "tcp-client-" + process.pid + ".mjs");
      writeFileSync(client, ${JSON.stringify(tcpClient)});
      const { NODE_OPTIONS, SELFHEAL_EGRESS_SOCKET, ...bare } = process.env;
      // The child without the preload knows only the relay; the one with it tries to listen too, and fails quietly.
      const unloaded = await run(client, { ...bare, NODE_EXTRA_CA_CERTS: ${JSON.stringify(certFile)} });
      const preloaded = await run(client, process.env);
      console.log(JSON.stringify({ unloaded, preloaded }));
    `;
    const result = await runJson(parent, env);
    const fetched = { plain: { status: 200, body: CSV }, secure: { status: 200, body: CSV } };
    expect(result).toEqual({
      unloaded: { code: 0, stdout: JSON.stringify({ ...fetched, preloaded: "undefined" }), stderr: "" },
      preloaded: { code: 0, stdout: JSON.stringify({ ...fetched, preloaded: "boolean" }), stderr: "" },
    });
    expect(records(proxy).map(({ host, method, allowed }) => [host, method, allowed])).toEqual([
      ["data.test", "HTTP", true],
      ["secure.test", "CONNECT", true],
      ["data.test", "HTTP", true],
      ["secure.test", "CONNECT", true],
    ]);
  });

  it("lets loopback go direct: a program's own server is not the proxy's business", async () => {
    const proxy = await startProxy();
    const result = await runJson(
      `${GET_HELPER}
      const server = http.createServer((request, response) => response.end("own " + request.url));
      await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
      const { port } = server.address();
      const fetched = await (await fetch("http://127.0.0.1:" + port + "/a")).text();
      const got = await get(http, "http://localhost:" + port + "/b");
      server.close();
      console.log(JSON.stringify({ fetched, got }));`,
      await sandboxEnv(proxy),
    );
    expect(result).toEqual({ fetched: "own /a", got: { status: 200, body: "own /b" } });
    expect(proxy.connections()).toEqual([]);
  });

  it("aborts a fetch whose answer hangs, with fetch's AbortError", async () => {
    const proxy = await startProxy();
    const result = await runJson(
      `const controller = new AbortController();
      const response = await fetch("http://data.test:${httpPort}/hang", { signal: controller.signal });
      const reader = response.body.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      controller.abort();
      const after = await reader.read().then(() => "read", (error) => error.name);
      console.log(JSON.stringify({ status: response.status, first, after }));`,
      await sandboxEnv(proxy),
    );
    expect(result).toEqual({ status: 200, first: "partial", after: "AbortError" });
  });

  it("uses the proxy over TCP when only the proxy variables are set (the process backend)", async () => {
    const proxy = await startProxy("tcp");
    if (proxy.address.kind !== "tcp") throw new Error("a TCP proxy was asked for");
    const url = `http://127.0.0.1:${proxy.address.port}`;
    const result = await runJson(
      `${GET_HELPER}
      console.log(JSON.stringify([
        await (await fetch("http://data.test:${httpPort}/x.csv")).text(),
        await (await fetch("https://secure.test:${httpsPort}/x.csv")).text(),
        await get(https, "https://other.test:${httpsPort}/x.csv"),
      ]));`,
      {
        HTTP_PROXY: url,
        HTTPS_PROXY: url,
        NODE_OPTIONS: `--require=${preloadFile}`,
        NODE_EXTRA_CA_CERTS: certFile,
      },
    );
    expect(result).toEqual([
      CSV,
      CSV,
      {
        error: `selfheal egress: the proxy refused other.test:${httpsPort}: 403 Forbidden: ${notListed("other.test")}`,
      },
    ]);
  });

  it("keeps the caller's TLS options (ca, rejectUnauthorized) inside the tunnel", async () => {
    const proxy = await startProxy();
    const { NODE_EXTRA_CA_CERTS: _trusted, ...env } = await sandboxEnv(proxy);
    const result = await runJson(
      `${GET_HELPER}
      import { readFileSync } from "node:fs";
      const url = "https://secure.test:${httpsPort}/x.csv";
      console.log(JSON.stringify({
        untrusted: await get(https, url),
        ca: await get(https, { host: "secure.test", port: ${httpsPort}, path: "/x.csv", ca: readFileSync(${JSON.stringify(certFile)}) }),
        unchecked: await get(https, { host: "secure.test", port: ${httpsPort}, path: "/x.csv", rejectUnauthorized: false }),
      }));`,
      env,
    );
    expect(result).toEqual({
      untrusted: { error: "self-signed certificate" },
      ca: { status: 200, body: CSV },
      unchecked: { status: 200, body: CSV },
    });
  });

  it("says so when the proxy's socket cannot be reached", async () => {
    const proxy = await startProxy();
    const gone = join(scratchDir("egress-gone"), "proxy.sock");
    const result = await runJson(
      `${GET_HELPER}
      console.log(JSON.stringify({
        fetch: await fetch("http://data.test:${httpPort}/x.csv").then(() => "fetched", failure),
        fetchHttps: await fetch("https://secure.test:${httpsPort}/x.csv").then(() => "fetched", failure),
      }));`,
      { ...(await sandboxEnv(proxy)), SELFHEAL_EGRESS_SOCKET: gone },
    );
    const cause = (authority: string) =>
      `selfheal egress: could not reach the proxy at ${gone} for ${authority}: ENOENT`;
    expect(result).toEqual({
      fetch: { name: "TypeError", message: "fetch failed", cause: cause(`data.test:${httpPort}`) },
      fetchHttps: { name: "TypeError", message: "fetch failed", cause: cause(`secure.test:${httpsPort}`) },
    });
  });

  it("does nothing without the socket or a proxy variable", async () => {
    const result = await runJson(
      `import http from "node:http";
      import https from "node:https";
      console.log(JSON.stringify({
        http: http.globalAgent.constructor.name,
        https: https.globalAgent.constructor.name,
        dispatcher: typeof globalThis[Symbol.for("undici.globalDispatcher.1")],
        preloaded: typeof globalThis[Symbol.for("selfheal.egress.preload")],
      }));`,
      { NODE_OPTIONS: `--require=${preloadFile}` },
    );
    expect(result).toEqual({ http: "Agent", https: "Agent", dispatcher: "undefined", preloaded: "undefined" });
  });
});
