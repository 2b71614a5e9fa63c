import type { IncomingHttpHeaders } from "node:http";
import { canonicalHost } from "../../core/allowlist.js";

/** Where a request asks to go: the host as the URL parser reads it (before the allowlist's checks). */
export interface RequestTarget {
  host: string;
  port: number;
}

/** A request the proxy cannot take as it is, with the status and the one line that say why. */
export interface TargetProblem {
  status: 400 | 403;
  reason: string;
  /** What could be read of the target, for the record. */
  host: string;
  port: number;
}

/**
 * The target of a plain HTTP request to the proxy: an absolute URI (`GET http://host:port/path`),
 * whose Host header, when sent, names the same host and port. A server reached through the proxy
 * routes by Host, so a request for a listed host carrying another Host would reach what the list
 * did not name (a shared front end's other tenants).
 */
export function httpRequestTarget(
  url: string,
  headers: IncomingHttpHeaders,
): (RequestTarget & { path: string; authority: string }) | TargetProblem {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { status: 400, reason: "send an absolute URI (GET http://host/path) to this proxy", host: "", port: 0 };
  }
  const host = parsed.hostname;
  if (parsed.protocol === "https:") {
    return { status: 400, reason: "https goes through a CONNECT tunnel, not a plain request", host, port: 443 };
  }
  if (parsed.protocol !== "http:") {
    return { status: 400, reason: `the proxy forwards http: only, not ${parsed.protocol}`, host, port: 0 };
  }
  const port = Number(parsed.port || 80);
  const sent = headers.host;
  if (sent !== undefined && !sameAuthority(sent, host, port)) {
    return {
      status: 403,
      reason: `the Host header ${JSON.stringify(sent)} differs from the request's host ${parsed.host}`,
      host,
      port,
    };
  }
  return { host, port, path: `${parsed.pathname}${parsed.search}`, authority: parsed.host };
}

/** The target of a CONNECT request: exactly `host:port` (an IPv6 address in brackets), nothing more. */
export function connectTarget(authority: string): RequestTarget | TargetProblem {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:/?#@\s[\]]+):(\d{1,5})$/.exec(authority);
  const port = Number(match?.[2]);
  if (!match || port < 1 || port > 65_535) {
    return { status: 400, reason: "CONNECT needs host:port", host: authority.slice(0, 255), port: 0 };
  }
  try {
    // The URL parser's reading of the host, as for a plain request: 0x7f.1 is 127.0.0.1 here too.
    return { host: new URL(`http://${match[1]}/`).hostname, port };
  } catch {
    return { status: 400, reason: `${match[1]} is not a host`, host: match[1]!, port };
  }
}

function sameAuthority(hostHeader: string, host: string, port: number): boolean {
  try {
    const sent = new URL(`http://${hostHeader}/`);
    if (sent.username || sent.password || sent.pathname !== "/" || sent.search) return false;
    const sentHost = canonicalHost(sent.hostname);
    const wanted = canonicalHost(host);
    if ("error" in sentHost || "error" in wanted) return false;
    return sentHost.host === wanted.host && Number(sent.port || 80) === port;
  } catch {
    return false;
  }
}

/** Headers that belong to one hop (RFC 9110, 7.6.1): the proxy's own link, never passed on. */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/**
 * The headers to pass on: the hop-by-hop ones and those the Connection header names dropped,
 * and `connection: close`, since the proxy opens one connection upstream per request (a program's
 * TLS tunnel whose TLS the proxy ends is the one connection kept open: proxy.ts drops it there).
 */
export function forwardedHeaders(headers: IncomingHttpHeaders, extra: Record<string, string> = {}) {
  const named = String(headers.connection ?? "")
    .split(",")
    .map((name) => name.trim().toLowerCase());
  const kept: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || named.includes(name)) continue;
    kept[name] = value;
  }
  return { ...kept, ...extra, connection: "close" };
}
