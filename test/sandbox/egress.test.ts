import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunResult, Sandbox } from "../../src/index.js";
import { BACKENDS, type BackendKind, backendMissing } from "../helpers/backends.js";
import { type EgressTestServers, startEgressTestServers, TEST_CSV } from "../helpers/egress-servers.js";

/**
 * Outbound network by allowlist (issue 40) on every backend, against two loopback servers the
 * run's proxy reaches under made-up names (SELFHEAL_EGRESS_RESOLVE): a listed host answers, and
 * everything else is refused and recorded. Nothing here reaches an address off this machine.
 */

/** How each backend gives allowHosts, written down (`Sandbox.egress`). */
const EGRESS: Record<BackendKind, "enforced" | "offered" | undefined> = {
  process: "offered",
  bwrap: "enforced",
  container: "enforced",
  gvisor: "enforced",
};

const TOKEN = "selfheal-test-token-5f1c";

let servers: EgressTestServers;
beforeAll(async () => {
  servers = await startEgressTestServers();
  process.env.SELFHEAL_EGRESS_RESOLVE = servers.resolveVariable;
  process.env.SELFHEAL_TEST_EGRESS_TOKEN = TOKEN;
  // The proxy connects on to secure.test itself where it ends a run's TLS: it trusts the test's certificate.
  process.env.SELFHEAL_EGRESS_CA_FILE = servers.certificateFile;
});
afterAll(async () => {
  delete process.env.SELFHEAL_EGRESS_RESOLVE;
  delete process.env.SELFHEAL_TEST_EGRESS_TOKEN;
  delete process.env.SELFHEAL_EGRESS_CA_FILE;
  await servers.close();
});

/** Each way out a program may try, and what came of it, as one JSON line. */
function probes(http: number, https: number): string {
  return `import json, os, socket, ssl, urllib.request, urllib.error
out = {}
def attempt(name, fn):
    try:
        out[name] = fn()
    except urllib.error.HTTPError as error:
        out[name] = f"HTTP {error.code}: {error.read().decode().strip()}"
    except Exception as error:
        out[name] = type(error).__name__
get = lambda url, **options: urllib.request.urlopen(url, timeout=20, **options).read().decode()
attempt("listed", lambda: get("http://data.test:${http}/x.csv"))
attempt("https", lambda: get("https://secure.test:${https}/x.csv", context=ssl.create_default_context(cafile="ca.pem")))
attempt("unlisted", lambda: get("http://other.test:${http}/x.csv"))
attempt("ip", lambda: get("http://10.255.255.1:${http}/x.csv"))
attempt("port", lambda: get("http://data.test:${https}/x.csv"))
attempt("redirect", lambda: get("http://data.test:${http}/redirect?to=http://other.test:${http}/x.csv"))
attempt("dns", lambda: socket.getaddrinfo("data.test", 80) and "resolved")
attempt("tcp", lambda: socket.create_connection(("127.0.0.1", ${http}), timeout=5) and "connected")
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("10.0.0.1", 53)) and "sent")
attempt("ipv6", lambda: socket.create_connection(("::1", ${http}), timeout=5) and "connected")
out["environment"] = dict(os.environ)
print(json.dumps(out))
`;
}

/** The connections of a run as [host, port, method, allowed, reason]. */
function connections(result: RunResult): unknown[] {
  return (result.egress?.connections ?? []).map((connection) => [
    connection.host,
    connection.port,
    connection.method,
    connection.allowed,
    connection.reason ?? null,
  ]);
}

for (const backend of BACKENDS) {
  const missing = backendMissing(backend.kind);
  describe.skipIf(missing !== null)(
    `allowHosts on the ${backend.kind} backend${missing ? `: skipped, ${missing}` : ""}`,
    () => {
      let sandbox: Sandbox;
      beforeAll(() => {
        sandbox = backend.make();
      });
      afterAll(() => sandbox.close());
      const egress = EGRESS[backend.kind];

      it(`says how it gives allowHosts: ${egress ?? "not at all"}`, () => {
        expect(sandbox.egress).toBe(egress);
      });

      if (egress === undefined) return;

      it("lets a listed host answer over HTTP and HTTPS, adds the secret header, and refuses the rest, each recorded", async () => {
        const { httpPort: http, httpsPort: https } = servers;
        const before = servers.seen.length;
        const result = await sandbox.run({
          language: "python",
          code: probes(http, https),
          timeoutMs: 60_000,
          inputs: [{ name: "ca.pem", content: Buffer.from(servers.certificate) }],
          allowHosts: [
            { host: `data.test:${http}`, headers: { Authorization: "Bearer env:SELFHEAL_TEST_EGRESS_TOKEN" } },
            `secure.test:${https}`,
          ],
        });
        expect(result.status, result.stderr).toBe("ok");
        const { environment, ...outcomes } = JSON.parse(result.stdout);
        const refusedRaw =
          egress === "enforced"
            ? {
                dns: "gaierror",
                tcp: "ConnectionRefusedError",
                udp: "OSError",
                // bwrap's namespace has an IPv6 loopback with nothing on it; docker's `none` has none at all.
                ipv6: backend.kind === "container" ? "OSError" : "ConnectionRefusedError",
              }
            : // The process backend shares the host's network: the proxy is offered, nothing is enforced.
              { dns: expect.any(String), tcp: "connected", udp: expect.any(String), ipv6: expect.any(String) };
        expect(outcomes).toEqual({
          listed: TEST_CSV,
          https: TEST_CSV,
          unlisted: "HTTP 403: other.test is not on the allowlist",
          ip: "HTTP 403: the IP address 10.255.255.1 is not on the allowlist (only a listed address is)",
          port: `HTTP 403: data.test is on the allowlist, but not port ${https}`,
          redirect: "HTTP 403: other.test is not on the allowlist",
          ...refusedRaw,
        });
        expect(connections(result)).toEqual([
          ["data.test", http, "HTTP", true, null],
          ["secure.test", https, "CONNECT", true, null],
          ["other.test", http, "HTTP", false, "other.test is not on the allowlist"],
          [
            "10.255.255.1",
            http,
            "HTTP",
            false,
            "the IP address 10.255.255.1 is not on the allowlist (only a listed address is)",
          ],
          ["data.test", https, "HTTP", false, `data.test is on the allowlist, but not port ${https}`],
          ["data.test", http, "HTTP", true, null],
          ["other.test", http, "HTTP", false, "other.test is not on the allowlist"],
        ]);
        expect(result.egress?.enforced).toBe(egress === "enforced");
        // The header reached the listed host on plain HTTP, and only there; the program never held it.
        const authorizations = servers.seen.slice(before).map((headers) => headers.authorization ?? null);
        expect(authorizations.filter((value) => value !== null)).toEqual([`Bearer ${TOKEN}`, `Bearer ${TOKEN}`]);
        expect(JSON.stringify(environment)).not.toContain(TOKEN);
        expect(JSON.stringify(result)).not.toContain(TOKEN);
      });

      it("lets Node's fetch reach a listed host, and refuses an unlisted one", async () => {
        const { httpPort: http } = servers;
        const result = await sandbox.run({
          language: "javascript",
          code: `(async () => {
  const listed = await (await fetch("http://data.test:${http}/x.csv")).text();
  const unlisted = await fetch("http://other.test:${http}/x.csv");
  console.log(JSON.stringify({ listed, unlisted: [unlisted.status, (await unlisted.text()).trim()] }));
})();`,
          timeoutMs: 60_000,
          allowHosts: [`data.test:${http}`],
        });
        expect(result.status, result.stderr).toBe("ok");
        expect(JSON.parse(result.stdout)).toEqual({
          listed: TEST_CSV,
          unlisted: [403, "other.test is not on the allowlist"],
        });
      });

      it("adds the secret header to HTTPS too where the entry has the proxy end its TLS, with a CA only the run trusts", async () => {
        const { httpsPort: https } = servers;
        const before = servers.seen.length;
        const allowHosts = [
          {
            host: `secure.test:${https}`,
            headers: { Authorization: "Bearer env:SELFHEAL_TEST_EGRESS_TOKEN" },
            tls: "terminate" as const,
          },
        ];
        const python = await sandbox.run({
          language: "python",
          code: `import os, urllib.request\nprint(urllib.request.urlopen("https://secure.test:${https}/x.csv", timeout=20).read().decode(), end="")\nprint(sorted(os.environ))`,
          timeoutMs: 60_000,
          allowHosts,
        });
        expect(python.status, python.stderr).toBe("ok");
        expect(python.stdout.startsWith(TEST_CSV)).toBe(true);
        const node = await sandbox.run({
          language: "javascript",
          code: `fetch("https://secure.test:${https}/x.csv").then((answer) => answer.text()).then((text) => process.stdout.write(text));`,
          timeoutMs: 60_000,
          allowHosts,
        });
        expect(node.status, node.stderr).toBe("ok");
        expect(node.stdout).toBe(TEST_CSV);
        // Each request reached the server with the header, over the proxy's own TLS.
        expect(servers.seen.slice(before).map((headers) => headers.authorization)).toEqual([
          `Bearer ${TOKEN}`,
          `Bearer ${TOKEN}`,
        ]);
        expect(connections(python)).toEqual([["secure.test", https, "CONNECT", true, null]]);
        expect(JSON.stringify([python, node])).not.toContain(TOKEN);
      });

      it("refuses connections past maxConnections, and says so on stderr", async () => {
        const { httpPort: http } = servers;
        const result = await sandbox.run({
          language: "python",
          code: `import urllib.request, urllib.error
for _ in range(3):
    try:
        print(len(urllib.request.urlopen("http://data.test:${http}/x.csv", timeout=20).read()))
    except urllib.error.HTTPError as error:
        print(error.code, error.read().decode().strip())
`,
          timeoutMs: 60_000,
          limits: { maxConnections: 2 },
          allowHosts: [`data.test:${http}`],
        });
        expect(result.stdout).toBe(
          `${TEST_CSV.length}\n${TEST_CSV.length}\n403 the proxy's connection limit (2) is reached\n`,
        );
        expect(result.stderr).toContain(
          "[selfheal] the run used its 2 connections through the egress proxy (maxConnections); later ones were refused",
        );
      });
    },
  );
}

describe("a run with allowHosts that cannot start its proxy", () => {
  it("does not run, and names the variable a header needs", async () => {
    const backend = BACKENDS.find((candidate) => candidate.kind === "process")!;
    const sandbox = backend.make();
    try {
      const result = await sandbox.run({
        language: "python",
        code: "print('never')",
        allowHosts: [{ host: "data.test", headers: { Authorization: "Bearer env:SELFHEAL_TEST_UNSET_TOKEN" } }],
      });
      expect(result.status).toBe("unavailable");
      expect(result.stdout).toBe("");
      expect(result.stderr).toContain(
        'allowHosts entry "data.test" takes a header from SELFHEAL_TEST_UNSET_TOKEN, which is not set in selfheal\'s environment',
      );
    } finally {
      await sandbox.close();
    }
  });
});
