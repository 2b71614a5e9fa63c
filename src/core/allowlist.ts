import { isIPv4, isIPv6 } from "node:net";

/**
 * The hosts a program may reach through the egress proxy (issue 40). An entry is a host name with
 * an optional port and an optional leading `*.`: `api.github.com`, `*.example.org:443`,
 * `files.local:8080`, or an IP literal (`203.0.113.7`, `[2001:db8::1]:8443`) that matches only
 * itself. The object form carries headers that a later step adds to the requests it allows.
 */
export type AllowHostInput = string | { host: string; headers?: Record<string, string>; tls?: "terminate" };

export interface AllowlistEntry {
  /** The entry as the user wrote it, for messages and records. */
  written: string;
  /** Lowercase, without a trailing dot or the `*.`; an IPv6 literal without brackets, in its short form. */
  host: string;
  kind: "name" | "wildcard" | "ipv4" | "ipv6";
  /** The ports it allows: the one written, else 80 and 443, the ports a URL without one means. */
  ports: readonly number[];
  headers?: Record<string, string>;
  /**
   * `tls: "terminate"`: the proxy ends the program's TLS with a certificate of the run's own CA
   * (which the run trusts) and opens its own to the host, so that it can add the headers to HTTPS
   * requests too. Without it an HTTPS tunnel is never looked into, and gets no headers.
   */
  terminateTls?: true;
}

export type Allowlist = readonly AllowlistEntry[];

export type AllowlistParse = { ok: true; allowlist: Allowlist } | { ok: false; errors: string[] };

/** What an entry allows when it names no port: plain HTTP and HTTPS. */
export const DEFAULT_ALLOWED_PORTS: readonly number[] = [80, 443];

/**
 * Parses every entry; a bad entry is an error that quotes it, and all of them are reported at
 * once, so a user fixes a list in one go. The caller (a setting's validation) turns errors into
 * its own message.
 */
export function parseAllowlist(inputs: readonly AllowHostInput[]): AllowlistParse {
  const allowlist: AllowlistEntry[] = [];
  const errors: string[] = [];
  for (const input of inputs) {
    const parsed = parseAllowHost(input);
    if ("error" in parsed) errors.push(parsed.error);
    else allowlist.push(parsed.entry);
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, allowlist };
}

export function parseAllowHost(input: AllowHostInput): { entry: AllowlistEntry } | { error: string } {
  const written = typeof input === "string" ? input : input?.host;
  if (typeof written !== "string") return { error: `allowHosts entry ${JSON.stringify(input)}: host must be a string` };
  const fail = (why: string) => ({ error: `allowHosts entry ${JSON.stringify(written)}: ${why}` });
  const headers = typeof input === "string" ? undefined : input.headers;
  const headerProblem = headers === undefined ? undefined : checkHeaders(headers);
  if (headerProblem) return fail(headerProblem);
  const tls = typeof input === "string" ? undefined : input.tls;
  if (tls !== undefined && tls !== "terminate") return fail(`tls must be "terminate" where given`);

  const text = written.trim();
  if (text === "") return fail("empty");
  if (/[/?#@]/.test(text) || text.includes("://")) {
    return fail("a host name with an optional port, not a URL (write api.github.com, not https://api.github.com/)");
  }
  if (/\s/.test(text)) return fail("contains white space");

  const split = splitHostPort(text);
  if ("error" in split) return fail(split.error);
  const wildcard = split.host.startsWith("*.");
  const host = canonicalHost(wildcard ? split.host.slice(2) : split.host);
  if ("error" in host) return fail(host.error);
  if (wildcard) {
    if (host.kind !== "name") return fail("a wildcard stands only before a host name, not an IP address");
    // `*.com` would open a whole top-level domain: almost surely a mistake, never a program's need.
    if (!host.host.includes(".")) return fail("a wildcard must stand over a domain of at least two labels");
  }
  const entry: AllowlistEntry = {
    written,
    host: host.host,
    kind: wildcard ? "wildcard" : host.kind,
    ports: split.port === undefined ? DEFAULT_ALLOWED_PORTS : [split.port],
  };
  if (headers !== undefined) entry.headers = { ...headers };
  if (tls === "terminate") {
    if (entry.kind !== "name") return fail(`tls: "terminate" needs a host name, not a wildcard or an IP address`);
    entry.terminateTls = true;
  }
  return { entry };
}

/**
 * The first entry that allows `host` on `port`, or undefined. `host` is compared as canonicalHost
 * makes it (case, trailing dot, IPv6 brackets and spellings), so `API.GitHub.com.` and `[::1]`
 * match as written differently; a host that is not valid matches nothing.
 */
export function matchAllowlist(allowlist: Allowlist, host: string, port: number): AllowlistEntry | undefined {
  const wanted = canonicalHost(host);
  if ("error" in wanted) return undefined;
  return allowlist.find((entry) => {
    if (!entry.ports.includes(port)) return false;
    // A wildcard is a suffix of labels: `*.example.org` covers a.example.org and a.b.example.org,
    // not example.org itself, and never an IP address (no name entry equals one: see canonicalHost).
    if (entry.kind === "wildcard") return wanted.kind === "name" && wanted.host.endsWith(`.${entry.host}`);
    return entry.host === wanted.host;
  });
}

export type CanonicalHost = { kind: "name" | "ipv4" | "ipv6"; host: string };

/**
 * A host as the proxy compares and resolves it: an IP literal in its one spelling (IPv6 without
 * brackets, short form), a name lowercase without its trailing dot. A name must be plain ASCII
 * labels (an international name in its xn-- form); one whose last label is a number is refused,
 * since URL parsers read `1.2.3` or `0x7f.1` as IPv4 addresses and would reach an address the list
 * does not name.
 */
export function canonicalHost(raw: string): CanonicalHost | { error: string } {
  const bare = raw.startsWith("[") && raw.endsWith("]") ? raw.slice(1, -1) : raw;
  if (isIPv6(bare)) return { kind: "ipv6", host: new URL(`http://[${bare}]/`).hostname.slice(1, -1) };
  if (bare !== raw) return { error: "not an IPv6 address inside [ ]" };
  if (isIPv4(raw)) return { kind: "ipv4", host: raw };
  const name = (raw.endsWith(".") ? raw.slice(0, -1) : raw).toLowerCase();
  if (name === "") return { error: "empty host name" };
  if (name.includes("*")) return { error: "a wildcard may only stand first, as *.example.org" };
  if (name.length > 253) return { error: "a host name is at most 253 characters" };
  const labels = name.split(".");
  if (!labels.every((label) => HOST_LABEL.test(label))) {
    return { error: "not a host name (labels of letters, digits, - and _, the xn-- form for international names)" };
  }
  if (/^(\d+|0x[0-9a-f]*)$/.test(labels.at(-1)!)) return { error: "looks like an IP address but is not one" };
  return { kind: "name", host: name };
}

const HOST_LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

/** Splits `host`, `host:port`, `[v6]` and `[v6]:port`; a bare IPv6 address is all host. */
function splitHostPort(text: string): { host: string; port?: number } | { error: string } {
  if (isIPv6(text)) return { host: text };
  const bracketed = /^(\[[^\]]*\])(?::(.*))?$/.exec(text);
  const match = bracketed ?? /^([^:]*)(?::(.*))?$/.exec(text);
  if (!match) return { error: "more than one colon: write an IPv6 address inside [ ]" };
  const host = match[1]!;
  const portText = match[2];
  if (portText === undefined) return { host };
  if (portText.includes(":")) return { error: "more than one colon: write an IPv6 address inside [ ]" };
  if (!/^\d{1,5}$/.test(portText)) return { error: `port ${JSON.stringify(portText)} is not a number` };
  const port = Number(portText);
  if (port < 1 || port > 65_535) return { error: `port ${port} is outside 1-65535` };
  return { host, port };
}

/** Headers go into requests later: a name that is not a token or a value with a line break would split one. */
function checkHeaders(headers: unknown): string | undefined {
  if (typeof headers !== "object" || headers === null || Array.isArray(headers)) {
    return "headers must be an object of names to strings";
  }
  for (const [name, value] of Object.entries(headers)) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) return `header name ${JSON.stringify(name)} is not valid`;
    if (typeof value !== "string" || /[\r\n\0]/.test(value)) {
      return `header ${name} must be a string on one line`;
    }
    if (!HEADER_FROM_ENV.test(value)) {
      return `header ${name} must name a variable of the host's environment (env:NAME, or a scheme and one: Bearer env:GITHUB_TOKEN), so that the secret stays out of the settings`;
    }
  }
  return undefined;
}

/** `env:NAME`, or a scheme before it (`Bearer env:NAME`): the value is read from the host's environment when a run starts. */
const HEADER_FROM_ENV = /^(?:([!#$%&'*+.^_`|~0-9A-Za-z-]+) )?env:([A-Za-z_][A-Za-z0-9_]*)$/;

/**
 * An entry's headers with their values read from `env` (the host's environment), or the names of
 * the variables that are not set. The values live only in the host process that runs the proxy.
 */
export function headersFromEnvironment(
  headers: Readonly<Record<string, string>>,
  env: NodeJS.ProcessEnv,
): { headers: Record<string, string> } | { missing: string[] } {
  const resolved: Record<string, string> = {};
  const missing: string[] = [];
  for (const [name, written] of Object.entries(headers)) {
    const [, scheme, variable = ""] = HEADER_FROM_ENV.exec(written) ?? [];
    const value = env[variable];
    if (value === undefined || value === "" || /[\r\n\0]/.test(value)) missing.push(variable);
    else resolved[name] = scheme ? `${scheme} ${value}` : value;
  }
  return missing.length > 0 ? { missing } : { headers: resolved };
}
