/**
 * The source of the preload every Node process of a run with an allowlist loads
 * (`NODE_OPTIONS=--require=<file>`, issue 40). Node 20's fetch (its bundled undici) and its http
 * and https modules ignore HTTP_PROXY; inside a sandbox the only way out is the egress proxy's
 * unix socket (SELFHEAL_EGRESS_SOCKET), so the preload routes them there without the program's
 * help:
 * - `http.globalAgent` connects to the proxy and sends each request in absolute form
 *   (`GET http://host:port/path`, its Host header kept), so the proxy answers a refusal itself (403);
 * - `https.globalAgent` opens a `CONNECT host:port` tunnel and TLS inside it (the caller's TLS
 *   options kept); a refusal is an Error that names the host, the port and the proxy's answer;
 * - undici's global dispatcher (the symbol every undici reads) is an object that performs each of
 *   fetch's requests with those two modules, so fetch goes the same way; redirects stay fetch's;
 * - with the socket set, a relay on 127.0.0.1 at HTTP_PROXY's port pipes each TCP connection to the
 *   socket, for child processes (curl, Python) that know only a TCP proxy. The first process of the
 *   run to listen keeps it; in the others the listen fails, which is silently fine.
 * Loopback hosts (the program's own servers) and NO_PROXY's hosts go direct. Without the socket
 * or a proxy variable the preload does nothing. It runs inside the sandbox: plain JavaScript,
 * node: builtins only, no output, and no work at load beyond defining things and the relay's listen.
 * Written with String.raw: the source must hold no backtick and no dollar-brace.
 */
export const NODE_EGRESS_PRELOAD = String.raw`"use strict";
(() => {
  const installed = Symbol.for("selfheal.egress.preload");
  if (globalThis[installed]) return;
  const env = process.env;
  const socketPath = env.SELFHEAL_EGRESS_SOCKET || "";
  const readProxy = (names) => {
    for (const name of names) {
      if (!env[name]) continue;
      try {
        const url = new URL(env[name]);
        if (url.protocol !== "http:" || !url.hostname) continue;
        return { hostname: url.hostname.replace(/^\[|\]$/g, ""), port: Number(url.port || 80) };
      } catch {}
    }
    return undefined;
  };
  const httpProxy = readProxy(["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"]);
  const httpsProxy = readProxy(["https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY"]);
  if (!socketPath && !httpProxy && !httpsProxy) return;
  Object.defineProperty(globalThis, installed, { value: true });

  const net = require("node:net");
  const http = require("node:http");
  const https = require("node:https");
  const { EventEmitter } = require("node:events");

  // The relay: programs that know only a TCP proxy (curl, Python) reach the unix socket through it.
  // One process of the run listens; in the others the listen fails (EADDRINUSE), which is fine.
  const relayPort = (httpProxy || httpsProxy || {}).port;
  const relayHost = (httpProxy || httpsProxy || {}).hostname;
  if (socketPath && relayPort && (relayHost === "127.0.0.1" || relayHost === "localhost")) {
    const relay = net.createServer({ allowHalfOpen: true }, (client) => {
      const upstream = net.connect({ path: socketPath, allowHalfOpen: true });
      const cut = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on("error", cut);
      upstream.on("error", cut);
      client.unref();
      upstream.unref();
      client.pipe(upstream);
      upstream.pipe(client);
    });
    relay.on("error", () => {});
    relay.listen({ host: "127.0.0.1", port: relayPort });
    relay.unref();
  }

  const where = (scheme) => {
    if (socketPath) return socketPath;
    const proxy = scheme === "https" ? httpsProxy || httpProxy : httpProxy || httpsProxy;
    return proxy.hostname + ":" + proxy.port;
  };
  const connectToProxy = (scheme) => {
    if (socketPath) return net.connect({ path: socketPath });
    const proxy = scheme === "https" ? httpsProxy || httpProxy : httpProxy || httpsProxy;
    return net.connect({ host: proxy.hostname, port: proxy.port });
  };
  const unreachable = (scheme, authority, error) =>
    new Error("selfheal egress: could not reach the proxy at " + where(scheme) + " for " + authority + ": " + (error.code || error.message));
  const authorityOf = (host, port) => (net.isIPv6(host) ? "[" + host + "]" : host) + ":" + port;

  // Loopback is the program's own (the sandbox's), never the proxy's business; NO_PROXY as curl reads it.
  const goesDirect = (host, port) => {
    let name = String(host || "localhost").toLowerCase();
    if (name.startsWith("[") && name.endsWith("]")) name = name.slice(1, -1);
    if (name.endsWith(".")) name = name.slice(0, -1);
    if (name === "localhost" || name.endsWith(".localhost") || name === "::1") return true;
    if (net.isIPv4(name) && name.startsWith("127.")) return true;
    for (const written of (env.no_proxy || env.NO_PROXY || "").split(/[\s,]+/)) {
      if (!written) continue;
      if (written === "*") return true;
      const withPort = /^(\[[^\]]*\]|[^:]*):(\d+)$/.exec(written);
      if (withPort && Number(withPort[2]) !== Number(port)) continue;
      let entry = (withPort ? withPort[1] : written).toLowerCase().replace(/^\[|\]$/g, "");
      if (entry.startsWith("*")) entry = entry.slice(1);
      if (entry.startsWith(".")) entry = entry.slice(1);
      if (entry && (name === entry || name.endsWith("." + entry))) return true;
    }
    return false;
  };

  // Plain HTTP: the request goes to the proxy in absolute form (GET http://host:port/path), its Host kept.
  const useAbsoluteForm = (request, options) => {
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(request.path)) return;
    const path = String(request.path || "/");
    const absolute = "http://" + authorityOf(options.host, options.port) + (path.startsWith("/") ? path : "/" + path);
    const before = request.method + " " + request.path + " HTTP/1.1\r\n";
    request.path = absolute;
    // A request given its headers as an array (or an Expect header) has its head written already.
    if (typeof request._header === "string" && request._header.startsWith(before)) {
      request._header = request.method + " " + absolute + " HTTP/1.1\r\n" + request._header.slice(before.length);
    }
  };

  class EgressHttpAgent extends http.Agent {
    addRequest(request, options, ...rest) {
      if (options && typeof options === "object" && !options.socketPath && !goesDirect(options.host, options.port)) {
        useAbsoluteForm(request, options);
      }
      return super.addRequest(request, options, ...rest);
    }
    createConnection(options, callback) {
      if (options.socketPath || goesDirect(options.host, options.port)) return super.createConnection(options, callback);
      const socket = connectToProxy("http");
      const onError = (error) => callback(unreachable("http", authorityOf(options.host, options.port), error));
      socket.once("error", onError);
      socket.once("connect", () => {
        socket.removeListener("error", onError);
        callback(null, socket);
      });
      return undefined;
    }
  }

  // HTTPS: a CONNECT tunnel through the proxy, then TLS to the host inside it.
  const refusal = (authority, head, body) => {
    const status = head.slice(0, head.indexOf("\r\n")).replace(/^HTTP\/\d(?:\.\d)?\s+/, "");
    const text = body.toString("utf8").trim();
    return new Error("selfheal egress: the proxy refused " + authority + ": " + status + (text ? ": " + text : ""));
  };
  const openTunnel = (host, port, callback) => {
    const authority = authorityOf(host, port);
    const socket = connectToProxy("https");
    let received = Buffer.alloc(0);
    let settled = false;
    let answer;
    const settle = (error) => {
      if (settled) return;
      settled = true;
      socket.removeListener("data", onData);
      socket.removeListener("end", onEnd);
      socket.removeListener("error", onError);
      if (error) {
        socket.destroy();
        callback(error);
      } else {
        callback(null, socket);
      }
    };
    const onError = (error) => {
      if (answer) return settle(refusal(authority, answer.head, received));
      settle(unreachable("https", authority, error));
    };
    const onEnd = () => {
      if (answer) return settle(refusal(authority, answer.head, received));
      settle(new Error("selfheal egress: the proxy closed the connection for " + authority + " without an answer"));
    };
    const onData = (chunk) => {
      received = Buffer.concat([received, chunk]);
      if (!answer) {
        const end = received.indexOf("\r\n\r\n");
        if (end === -1) {
          if (received.length > 65536) settle(new Error("selfheal egress: the proxy's answer for " + authority + " has no end"));
          return;
        }
        const head = received.toString("latin1", 0, end);
        received = received.subarray(end + 4);
        const status = Number(/^HTTP\/\d(?:\.\d)?\s+(\d{3})/.exec(head)?.[1]);
        if (status >= 200 && status < 300) {
          socket.pause();
          if (received.length > 0) socket.unshift(received);
          return settle(null);
        }
        const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
        answer = { head, length: length ? Number(length[1]) : Number.POSITIVE_INFINITY };
      }
      if (received.length >= answer.length) settle(refusal(authority, answer.head, received.subarray(0, answer.length)));
    };
    socket.on("data", onData);
    socket.on("end", onEnd);
    socket.on("error", onError);
    socket.write("CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n");
  };

  class EgressHttpsAgent extends https.Agent {
    createConnection(options, callback) {
      if (options.socketPath || goesDirect(options.host, options.port)) return super.createConnection(options, callback);
      openTunnel(options.host || "localhost", options.port || 443, (error, socket) => {
        if (error) return callback(error);
        let secure;
        try {
          // https.Agent's own: tls.connect with the caller's options (ca, servername, ...) and its session cache.
          secure = super.createConnection({ ...options, socket });
        } catch (failure) {
          socket.destroy();
          return callback(failure);
        }
        callback(null, secure);
      });
      return undefined;
    }
  }

  http.globalAgent = new EgressHttpAgent(http.globalAgent.options);
  https.globalAgent = new EgressHttpsAgent(https.globalAgent.options);

  // fetch: undici's global dispatcher, each request made with http/https (so through the agents above).
  const latin1 = (values) => (values || []).map((value) => Buffer.from(value, "latin1"));
  const headerText = (value) => (Buffer.isBuffer(value) ? value.toString("latin1") : String(value));
  const headerObject = (headers) => {
    const out = { __proto__: null };
    const add = (name, value) => {
      if (value == null) return;
      const key = headerText(name).toLowerCase();
      const values = Array.isArray(value) ? value.map(headerText) : [headerText(value)];
      const all = key in out ? [].concat(out[key], values) : values;
      out[key] = all.length === 1 ? all[0] : all;
    };
    if (headers == null) return out;
    if (Array.isArray(headers)) {
      if (Array.isArray(headers[0])) for (const [name, value] of headers) add(name, value);
      else for (let i = 0; i + 1 < headers.length; i += 2) add(headers[i], headers[i + 1]);
    } else if (typeof headers[Symbol.iterator] === "function") {
      for (const [name, value] of headers) add(name, value);
    } else {
      for (const name of Object.keys(headers)) add(name, headers[name]);
    }
    return out;
  };
  const drained = (request) =>
    new Promise((resolve) => {
      const done = () => {
        request.removeListener("drain", done);
        request.removeListener("close", done);
        resolve();
      };
      request.on("drain", done);
      request.on("close", done);
    });
  const sendBody = async (request, body) => {
    if (body == null) return void request.end();
    if (typeof body === "string" || body instanceof Uint8Array) return void request.end(body);
    if (body instanceof ArrayBuffer) return void request.end(Buffer.from(body));
    if (typeof body.stream === "function" && typeof body.arrayBuffer === "function") body = body.stream();
    if (typeof body[Symbol.asyncIterator] !== "function" && typeof body[Symbol.iterator] !== "function") {
      throw new TypeError("selfheal egress: cannot send a request body of this kind");
    }
    for await (const chunk of body) {
      if (request.destroyed) return;
      const bytes = typeof chunk === "string" || chunk instanceof Uint8Array ? chunk : Buffer.from(chunk);
      if (!request.write(bytes)) await drained(request);
    }
    if (!request.destroyed) request.end();
  };

  class EgressDispatcher extends EventEmitter {
    #active = new Set();
    #idle = [];
    #closed = false;

    dispatch(opts, handler) {
      let request;
      let finished = false;
      const finish = () => {
        finished = true;
        if (request) this.#active.delete(request);
        if (this.#active.size === 0) for (const resolve of this.#idle.splice(0)) resolve();
      };
      const fail = (error) => {
        if (finished) return;
        finish();
        request?.destroy();
        handler.onError(error);
      };
      try {
        if (this.#closed) throw new Error("selfheal egress: the dispatcher is closed");
        if (opts.upgrade) throw new Error("selfheal egress: upgrades (WebSocket) are not supported through the proxy");
        const origin = new URL(String(opts.origin));
        const secure = origin.protocol === "https:";
        if (!secure && origin.protocol !== "http:") throw new TypeError("selfheal egress: cannot request " + origin.protocol + " URLs");
        handler.onConnect?.((reason) => fail(reason ?? new Error("selfheal egress: the request was aborted")));
        if (finished) return true;
        request = (secure ? https : http).request({
          protocol: origin.protocol,
          hostname: origin.hostname.replace(/^\[|\]$/g, ""),
          port: origin.port || (secure ? 443 : 80),
          method: opts.method || "GET",
          path: opts.path || "/",
          headers: headerObject(opts.headers),
        });
        this.#active.add(request);
        request.on("error", fail);
        request.on("response", (response) => {
          response.on("error", fail);
          response.on("close", () => {
            if (!response.complete) fail(new Error("selfheal egress: the answer from " + origin.host + " was cut short"));
          });
          let more;
          try {
            handler.onResponseStarted?.();
            more = handler.onHeaders(
              response.statusCode,
              latin1(response.rawHeaders),
              () => response.resume(),
              response.statusMessage,
            );
          } catch (error) {
            return fail(error);
          }
          if (more === false) response.pause();
          response.on("data", (chunk) => {
            if (finished) return;
            try {
              if (handler.onData(chunk) === false) response.pause();
            } catch (error) {
              fail(error);
            }
          });
          response.on("end", () => {
            if (finished) return;
            finish();
            handler.onComplete(latin1(response.rawTrailers));
          });
        });
        sendBody(request, opts.body).catch(fail);
      } catch (error) {
        fail(error);
      }
      return true;
    }

    close(callback) {
      this.#closed = true;
      const done = new Promise((resolve) => {
        if (this.#active.size === 0) resolve();
        else this.#idle.push(resolve);
      });
      if (typeof callback !== "function") return done;
      done.then(() => callback(null));
    }

    destroy(error, callback) {
      if (typeof error === "function") return this.destroy(null, error);
      this.#closed = true;
      for (const request of this.#active) request.destroy(error || new Error("selfheal egress: the dispatcher was destroyed"));
      return this.close(callback);
    }
  }

  Object.defineProperty(globalThis, Symbol.for("undici.globalDispatcher.1"), {
    value: new EgressDispatcher(),
    writable: true,
    enumerable: false,
    configurable: true,
  });
})();
`;
