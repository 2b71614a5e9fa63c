import { once } from "node:events";
import { createServer, type Server } from "node:http";

import type { RunResult, Sandbox } from "../sandbox/types.js";
import type { TestRunner } from "./runner.js";

/** How a backend says it gives `allowHosts` (`Sandbox.egress`), or undefined for not at all. */
export type EgressClaim = Sandbox["egress"];

/** What the loopback server answers at /x.csv. */
export const EGRESS_TEST_CSV = "city,people\nLyon,522250\nNantes,323204\n";
/**
 * The made-up names the cases use, and the variable that maps them to the loopback server for
 * selfheal's egress proxy (as curl's --resolve): nothing the suite does leaves the machine.
 */
const RESOLVE_VARIABLE = "SELFHEAL_EGRESS_RESOLVE";

/**
 * A Python program that tries each way out and prints one JSON line of what came of each:
 * the listed host, then what the list must refuse (an unlisted name, an IP literal, a port not
 * listed, a redirect to an unlisted host), then what must find no route on a backend that
 * enforces the list (DNS, raw TCP, UDP, IPv6), and the program's environment.
 */
export function egressProbeProgram(listedPort: number, otherPort: number): string {
  return `import json, os, socket, urllib.request, urllib.error
out = {}
def attempt(name, fn):
    try:
        out[name] = fn()
    except urllib.error.HTTPError as error:
        out[name] = f"HTTP {error.code}: {error.read().decode().strip()}"
    except Exception as error:
        out[name] = type(error).__name__
get = lambda url: urllib.request.urlopen(url, timeout=20).read().decode()
attempt("listed", lambda: get("http://data.test:${listedPort}/x.csv"))
attempt("unlisted", lambda: get("http://other.test:${listedPort}/x.csv"))
attempt("ip", lambda: get("http://10.255.255.1:${listedPort}/x.csv"))
attempt("port", lambda: get("http://data.test:${otherPort}/x.csv"))
attempt("redirect", lambda: get("http://data.test:${listedPort}/redirect?to=http://other.test:${listedPort}/x.csv"))
attempt("dns", lambda: socket.getaddrinfo("data.test", 80) and "resolved")
attempt("tcp", lambda: socket.create_connection(("127.0.0.1", ${listedPort}), timeout=5) and "connected")
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("10.0.0.1", 53)) and "sent")
attempt("ipv6", lambda: socket.create_connection(("::1", ${listedPort}), timeout=5) and "connected")
out["environment"] = dict(os.environ)
print(json.dumps(out))
`;
}

/** What the list itself refuses, the same on every backend that gives allowHosts. */
export function refusedByTheList(otherPort: number): Record<string, string> {
  return {
    unlisted: "HTTP 403: other.test is not on the allowlist",
    ip: "HTTP 403: the IP address 10.255.255.1 is not on the allowlist (only a listed address is)",
    port: `HTTP 403: data.test is on the allowlist, but not port ${otherPort}`,
    redirect: "HTTP 403: other.test is not on the allowlist",
  };
}

/** The run's connections as [host, port, method, allowed, reason]. */
export function connectionRows(result: RunResult): unknown[] {
  return (result.egress?.connections ?? []).map((connection) => [
    connection.host,
    connection.port,
    connection.method,
    connection.allowed,
    connection.reason ?? null,
  ]);
}

/**
 * The egress part of the sandbox contract (issue 40), registered by describeSandboxConformance:
 * the backend's `egress` is what the caller wrote down; where it gives allowHosts, a listed host
 * answers and what the list refuses is refused and recorded; where it enforces the list, DNS, raw
 * TCP, UDP and IPv6 find no way out. The cases reach a server on this machine's loopback under
 * made-up names, through SELFHEAL_EGRESS_RESOLVE, which selfheal's egress proxy honours.
 */
export function describeEgressCases(
  runner: Pick<TestRunner, "describe" | "it" | "expect" | "beforeAll" | "afterAll">,
  sandbox: () => Sandbox,
  claim: EgressClaim,
): void {
  const { describe, it, expect, beforeAll, afterAll } = runner;
  describe("egress (allowHosts)", () => {
    let server: Server;
    let port = 0;
    /** A port with nothing of the list on it: data.test is listed on `port` only. */
    let otherPort = 0;
    let other: Server;
    const before = process.env[RESOLVE_VARIABLE];
    beforeAll(async () => {
      server = createServer((request, response) => {
        const url = new URL(request.url ?? "/", "http://server");
        if (url.pathname === "/redirect") {
          response.writeHead(302, { location: url.searchParams.get("to") ?? "/" });
          response.end();
        } else {
          response.writeHead(200, { "content-type": "text/csv" });
          response.end(EGRESS_TEST_CSV);
        }
      });
      other = createServer((_, response) => response.end("not listed\n"));
      for (const listening of [server, other]) {
        listening.listen(0, "127.0.0.1");
        await once(listening, "listening");
      }
      port = (server.address() as { port: number }).port;
      otherPort = (other.address() as { port: number }).port;
      const names = "data.test=127.0.0.1,other.test=127.0.0.1";
      process.env[RESOLVE_VARIABLE] = before ? `${before},${names}` : names;
    });
    afterAll(async () => {
      if (before === undefined) delete process.env[RESOLVE_VARIABLE];
      else process.env[RESOLVE_VARIABLE] = before;
      for (const listening of [server, other]) {
        listening.closeAllConnections();
        await new Promise((resolve) => listening.close(resolve));
      }
    });

    it(`says how it gives allowHosts: ${claim ?? "not at all"}`, () => {
      expect(sandbox().egress).toBe(claim);
    });

    if (claim === undefined) return;

    it("lets a listed host answer, refuses and records what the list does not name, and finds no other way out", async () => {
      const result = await sandbox().run({
        language: "python",
        code: egressProbeProgram(port, otherPort),
        timeoutMs: 60_000,
        allowHosts: [`data.test:${port}`],
      });
      expect(result.status, result.stderr).toBe("ok");
      const { environment, dns, tcp, udp, ipv6, ...outcomes } = JSON.parse(result.stdout);
      expect(outcomes).toEqual({ listed: EGRESS_TEST_CSV, ...refusedByTheList(otherPort) });
      expect(connectionRows(result)).toEqual([
        ["data.test", port, "HTTP", true, null],
        ["other.test", port, "HTTP", false, "other.test is not on the allowlist"],
        [
          "10.255.255.1",
          port,
          "HTTP",
          false,
          "the IP address 10.255.255.1 is not on the allowlist (only a listed address is)",
        ],
        ["data.test", otherPort, "HTTP", false, `data.test is on the allowlist, but not port ${otherPort}`],
        ["data.test", port, "HTTP", true, null],
        ["other.test", port, "HTTP", false, "other.test is not on the allowlist"],
      ]);
      expect(result.egress?.enforced).toBe(claim === "enforced");
      expect(Object.keys(environment)).toContain("HTTP_PROXY");
      if (claim === "enforced") {
        // What each attempt raised varies with the backend's namespace; none of them got through.
        expect({ dns, tcp, udp, ipv6 }).toEqual({
          dns: expect.not.stringMatching(/^resolved$/),
          tcp: expect.not.stringMatching(/^connected$/),
          udp: expect.not.stringMatching(/^sent$/),
          ipv6: expect.not.stringMatching(/^connected$/),
        });
      }
    });

    it("refuses a program that talks to the proxy itself: an unlisted CONNECT, a Host that is not the URL's", async () => {
      const result = await sandbox().run({
        language: "python",
        code: `import os, socket
def ask(head):
    path = os.environ.get("SELFHEAL_EGRESS_SOCKET")
    if path:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(path)
    else:
        address = os.environ["HTTP_PROXY"].rsplit("/", 1)[-1].rsplit(":", 1)
        connection = socket.create_connection((address[0], int(address[1])))
    connection.sendall(head.encode())
    answer = b""
    while chunk := connection.recv(65536):
        answer += chunk
    return answer.decode().split("\\r\\n")[0]
print(ask("CONNECT other.test:${port} HTTP/1.1\\r\\nHost: other.test:${port}\\r\\n\\r\\n"))
print(ask("GET http://data.test:${port}/x.csv HTTP/1.1\\r\\nHost: other.test:${port}\\r\\nConnection: close\\r\\n\\r\\n"))
`,
        timeoutMs: 60_000,
        allowHosts: [`data.test:${port}`],
      });
      expect(result.status, result.stderr).toBe("ok");
      const [connect, mismatched] = result.stdout.trim().split("\n");
      expect(connect).toBe("HTTP/1.1 403 Forbidden");
      expect(mismatched).toMatch(/^HTTP\/1\.1 (400|403) /);
      expect(connectionRows(result).map((row) => (row as unknown[])[3])).toEqual([false, false]);
    });
  });
}
