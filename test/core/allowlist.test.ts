import { describe, expect, it } from "vitest";
import {
  type AllowHostInput,
  type AllowlistEntry,
  headersFromEnvironment,
  matchAllowlist,
  parseAllowHost,
  parseAllowlist,
} from "../../src/core/allowlist.js";
import { isPrivateAddress } from "../../src/sandbox/egress/addresses.js";

/** The list `inputs` make, which the test expects to parse. */
function listOf(...inputs: AllowHostInput[]): readonly AllowlistEntry[] {
  const parsed = parseAllowlist(inputs);
  if (!parsed.ok) throw new Error(`expected a valid list, got ${parsed.errors.join("; ")}`);
  return parsed.allowlist;
}

describe("an allowlist entry", () => {
  it("is a host name, allowing ports 80 and 443 when it names none", () => {
    expect(parseAllowHost("api.github.com")).toEqual({
      entry: { written: "api.github.com", host: "api.github.com", kind: "name", ports: [80, 443] },
    });
  });

  it("may name one port, and a wildcard over a domain", () => {
    expect(parseAllowHost("*.example.org:443")).toEqual({
      entry: { written: "*.example.org:443", host: "example.org", kind: "wildcard", ports: [443] },
    });
    expect(parseAllowHost("files.local:8080")).toEqual({
      entry: { written: "files.local:8080", host: "files.local", kind: "name", ports: [8080] },
    });
  });

  it("is kept lowercase without its trailing dot, as written for messages", () => {
    expect(parseAllowHost("API.GitHub.COM.")).toEqual({
      entry: { written: "API.GitHub.COM.", host: "api.github.com", kind: "name", ports: [80, 443] },
    });
  });

  it("may be an IPv4 or IPv6 literal, the IPv6 one in brackets when it has a port", () => {
    expect(parseAllowHost("203.0.113.7")).toEqual({
      entry: { written: "203.0.113.7", host: "203.0.113.7", kind: "ipv4", ports: [80, 443] },
    });
    expect(parseAllowHost("[2001:DB8:0::1]:8443")).toEqual({
      entry: { written: "[2001:DB8:0::1]:8443", host: "2001:db8::1", kind: "ipv6", ports: [8443] },
    });
    expect(parseAllowHost("::1")).toEqual({ entry: { written: "::1", host: "::1", kind: "ipv6", ports: [80, 443] } });
  });

  it("in its object form may ask the proxy to end its TLS", () => {
    expect(parseAllowHost({ host: "api.example.org", tls: "terminate" })).toEqual({
      entry: {
        written: "api.example.org",
        host: "api.example.org",
        kind: "name",
        ports: [80, 443],
        terminateTls: true,
      },
    });
  });

  it("in its object form carries its headers", () => {
    expect(parseAllowHost({ host: "api.github.com", headers: { Authorization: "Bearer env:GITHUB_TOKEN" } })).toEqual({
      entry: {
        written: "api.github.com",
        host: "api.github.com",
        kind: "name",
        ports: [80, 443],
        headers: { Authorization: "Bearer env:GITHUB_TOKEN" },
      },
    });
  });

  it("is refused, with a message quoting it, when it is empty, a URL, a misplaced wildcard or a bad port", () => {
    const refusals: [AllowHostInput, string][] = [
      ["", 'allowHosts entry "": empty'],
      ["   ", 'allowHosts entry "   ": empty'],
      [
        "https://api.github.com/",
        'allowHosts entry "https://api.github.com/": a host name with an optional port, not a URL (write api.github.com, not https://api.github.com/)',
      ],
      [
        "api.github.com/repos",
        'allowHosts entry "api.github.com/repos": a host name with an optional port, not a URL (write api.github.com, not https://api.github.com/)',
      ],
      ["api.*.com", 'allowHosts entry "api.*.com": a wildcard may only stand first, as *.example.org'],
      ["*example.org", 'allowHosts entry "*example.org": a wildcard may only stand first, as *.example.org'],
      ["*.com", 'allowHosts entry "*.com": a wildcard must stand over a domain of at least two labels'],
      ["*.10.0.0.1", 'allowHosts entry "*.10.0.0.1": a wildcard stands only before a host name, not an IP address'],
      ["files.local:0", 'allowHosts entry "files.local:0": port 0 is outside 1-65535'],
      ["files.local:65536", 'allowHosts entry "files.local:65536": port 65536 is outside 1-65535'],
      ["files.local:http", 'allowHosts entry "files.local:http": port "http" is not a number'],
      ["files.local:", 'allowHosts entry "files.local:": port "" is not a number'],
      ["a:b:c", 'allowHosts entry "a:b:c": more than one colon: write an IPv6 address inside [ ]'],
      ["10.1.2", 'allowHosts entry "10.1.2": looks like an IP address but is not one'],
      ["[api.github.com]", 'allowHosts entry "[api.github.com]": not an IPv6 address inside [ ]'],
      [
        "bad_-.host!",
        'allowHosts entry "bad_-.host!": not a host name (labels of letters, digits, - and _, the xn-- form for international names)',
      ],
      [
        { host: "api.github.com", headers: { "X-Token": "a\r\nInjected: 1" } },
        'allowHosts entry "api.github.com": header X-Token must be a string on one line',
      ],
      [
        { host: "api.github.com", headers: { Authorization: "Bearer ghp_literal" } },
        'allowHosts entry "api.github.com": header Authorization must name a variable of the host\'s environment (env:NAME, or a scheme and one: Bearer env:GITHUB_TOKEN), so that the secret stays out of the settings',
      ],
    ];
    refusals.push(
      [
        { host: "*.example.org", tls: "terminate" },
        'allowHosts entry "*.example.org": tls: "terminate" needs a host name, not a wildcard or an IP address',
      ],
      [
        { host: "api.example.org", tls: "inspect" as "terminate" },
        'allowHosts entry "api.example.org": tls must be "terminate" where given',
      ],
    );
    for (const [input, message] of refusals) expect(parseAllowHost(input)).toEqual({ error: message });
  });

  it("list reports every bad entry at once, and keeps none of the list", () => {
    expect(parseAllowlist(["api.github.com", "", "http://x.org"])).toEqual({
      ok: false,
      errors: [
        'allowHosts entry "": empty',
        'allowHosts entry "http://x.org": a host name with an optional port, not a URL (write api.github.com, not https://api.github.com/)',
      ],
    });
  });
});

describe("matchAllowlist", () => {
  const allowlist = listOf("api.github.com", "*.example.org:443", "files.local:8080", "203.0.113.7", "[2001:db8::1]");

  it("finds a listed name on 80 and 443 only, whatever its case and trailing dot", () => {
    expect(matchAllowlist(allowlist, "api.github.com", 443)?.written).toBe("api.github.com");
    expect(matchAllowlist(allowlist, "API.GITHUB.COM.", 80)?.written).toBe("api.github.com");
    expect(matchAllowlist(allowlist, "api.github.com", 8080)).toBeUndefined();
  });

  it("finds a name under a wildcard at any depth, not the wildcard's own domain", () => {
    expect(matchAllowlist(allowlist, "a.example.org", 443)?.written).toBe("*.example.org:443");
    expect(matchAllowlist(allowlist, "a.b.example.org", 443)?.written).toBe("*.example.org:443");
    expect(matchAllowlist(allowlist, "example.org", 443)).toBeUndefined();
    expect(matchAllowlist(allowlist, "badexample.org", 443)).toBeUndefined();
    expect(matchAllowlist(allowlist, "a.example.org", 80)).toBeUndefined();
  });

  it("finds a name with a port on that port only", () => {
    expect(matchAllowlist(allowlist, "files.local", 8080)?.written).toBe("files.local:8080");
    expect(matchAllowlist(allowlist, "files.local", 80)).toBeUndefined();
  });

  it("finds an IP literal only as itself, in any spelling of it", () => {
    expect(matchAllowlist(allowlist, "203.0.113.7", 443)?.written).toBe("203.0.113.7");
    expect(matchAllowlist(allowlist, "[2001:DB8:0:0::1]", 80)?.written).toBe("[2001:db8::1]");
    expect(matchAllowlist(allowlist, "203.0.113.8", 443)).toBeUndefined();
    expect(matchAllowlist(listOf("*.example.org"), "10.0.0.1", 443)).toBeUndefined();
  });

  it("finds nothing for an unlisted or invalid host", () => {
    expect(matchAllowlist(allowlist, "github.com", 443)).toBeUndefined();
    expect(matchAllowlist(allowlist, "api.github.com.evil.test", 443)).toBeUndefined();
    expect(matchAllowlist(allowlist, "", 443)).toBeUndefined();
    expect(matchAllowlist(allowlist, "*.example.org", 443)).toBeUndefined();
  });
});

describe("isPrivateAddress", () => {
  it("is true for loopback, private, link-local, shared and unspecified IPv4 ranges", () => {
    const privateOnes = ["0.0.0.0", "10.1.2.3", "100.64.0.1", "127.0.0.1", "127.255.0.9", "169.254.169.254"];
    const more = ["172.16.0.1", "172.31.255.255", "192.168.1.1", "224.0.0.1"];
    expect([...privateOnes, ...more].filter((address) => !isPrivateAddress(address))).toEqual([]);
  });

  it("is true for IPv6 loopback, unique-local, link-local, and IPv4-mapped private addresses", () => {
    const privateOnes = ["::1", "::", "fc00::1", "fd12:3456::1", "fe80::1", "::ffff:127.0.0.1", "::ffff:7f00:1"];
    expect([...privateOnes, "::ffff:10.0.0.1", "::ffff:a9fe:a9fe"].filter((a) => !isPrivateAddress(a))).toEqual([]);
  });

  it("is false for public addresses, IPv4-mapped ones included, and true for what is not an address", () => {
    const publicOnes = ["8.8.8.8", "172.32.0.1", "100.128.0.1", "203.0.113.7", "2606:4700::1111", "::ffff:8.8.8.8"];
    expect(publicOnes.filter((address) => isPrivateAddress(address))).toEqual([]);
    expect(isPrivateAddress("example.org")).toBe(true);
  });
});

describe("headers from the host's environment", () => {
  it("read each variable, with the scheme written before it", () => {
    expect(
      headersFromEnvironment(
        { Authorization: "Bearer env:GITHUB_TOKEN", "X-Key": "env:KEY_1" },
        { GITHUB_TOKEN: "ghp_123", KEY_1: "k" },
      ),
    ).toEqual({ headers: { Authorization: "Bearer ghp_123", "X-Key": "k" } });
  });

  it("name every variable that is unset, empty or not one line", () => {
    expect(
      headersFromEnvironment(
        { A: "env:UNSET", B: "env:EMPTY", C: "Bearer env:TWO_LINES", D: "env:SET" },
        { EMPTY: "", TWO_LINES: "a\nb", SET: "x" },
      ),
    ).toEqual({ missing: ["UNSET", "EMPTY", "TWO_LINES"] });
  });
});
