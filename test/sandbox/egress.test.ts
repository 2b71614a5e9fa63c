import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/index.js";
import { connectionRows } from "../../src/testing/egress.js";
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

/** The listed hosts over HTTP and HTTPS (trusting the test's certificate), and the environment, as one JSON line. */
function fetches(http: number, https: number): string {
  return `import json, os, ssl, urllib.request
get = lambda url, **options: urllib.request.urlopen(url, timeout=20, **options).read().decode()
print(json.dumps({
    "http": get("http://data.test:${http}/x.csv"),
    "https": get("https://secure.test:${https}/x.csv", context=ssl.create_default_context(cafile="ca.pem")),
    "environment": dict(os.environ),
}))
`;
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

      // What the list refuses, and that nothing else gets out, is the conformance suite's (src/testing/egress.ts).
      it("lets listed hosts answer over HTTP and HTTPS, with the secret header on plain HTTP, which the program never holds", async () => {
        const { httpPort: http, httpsPort: https } = servers;
        const before = servers.seen.length;
        const result = await sandbox.run({
          language: "python",
          code: fetches(http, https),
          timeoutMs: 60_000,
          inputs: [{ name: "ca.pem", content: Buffer.from(servers.certificate) }],
          allowHosts: [
            { host: `data.test:${http}`, headers: { Authorization: "Bearer env:SELFHEAL_TEST_EGRESS_TOKEN" } },
            `secure.test:${https}`,
          ],
        });
        expect(result.status, result.stderr).toBe("ok");
        const { environment, ...fetched } = JSON.parse(result.stdout);
        expect(fetched).toEqual({ http: TEST_CSV, https: TEST_CSV });
        expect(connectionRows(result)).toEqual([
          ["data.test", http, "HTTP", true, null],
          ["secure.test", https, "CONNECT", true, null],
        ]);
        expect(result.egress?.enforced).toBe(egress === "enforced");
        // The header reached the listed host on plain HTTP only (the HTTPS tunnel is not looked into).
        expect(servers.seen.slice(before).map((headers) => headers.authorization ?? null)).toEqual([
          `Bearer ${TOKEN}`,
          null,
        ]);
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
        expect(connectionRows(python)).toEqual([["secure.test", https, "CONNECT", true, null]]);
        expect(JSON.stringify([python, node])).not.toContain(TOKEN);
      });

      // Where Debian's python3 runs programs: the container has its image's Python, gVisor the same host's.
      if (backend.kind === "bwrap" || backend.kind === "process" || backend.kind === "gvisor")
        it("lets requests (Debian's python3-requests) reach a listed host over HTTP and, with the TLS ended, HTTPS", async () => {
          const { httpPort: http, httpsPort: https } = servers;
          const before = servers.seen.length;
          const result = await sandbox.run({
            language: "python",
            // Debian's own Python, which has python3-requests (.ci/run installs it).
            python: "/usr/bin/python3",
            code: `import requests\nprint(requests.get("http://data.test:${http}/x.csv", timeout=20).text, end="")\nprint(requests.get("https://secure.test:${https}/x.csv", timeout=20).text, end="")\nprint(requests.get("http://other.test:${http}/x.csv", timeout=20).status_code)`,
            timeoutMs: 60_000,
            allowHosts: [
              `data.test:${http}`,
              {
                host: `secure.test:${https}`,
                headers: { Authorization: "Bearer env:SELFHEAL_TEST_EGRESS_TOKEN" },
                tls: "terminate",
              },
            ],
          });
          // On a failure, what the proxy saw of each connection (a TLS handshake's failure has its reason).
          expect(result.status, `${result.stderr}\n${JSON.stringify(result.egress?.connections)}`).toBe("ok");
          expect(result.stdout).toBe(`${TEST_CSV}${TEST_CSV}403\n`);
          expect(servers.seen.slice(before).map((headers) => headers.authorization ?? null)).toEqual([
            null,
            `Bearer ${TOKEN}`,
          ]);
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
