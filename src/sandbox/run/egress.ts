import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { rootCertificates } from "node:tls";
import {
  type AllowHostInput,
  type AllowlistEntry,
  headersFromEnvironment,
  parseAllowlist,
} from "../../core/allowlist.js";
import type { EgressReport, RunResult } from "../../core/run-result.js";
import { NODE_EGRESS_PRELOAD } from "../egress/node-preload.js";
import { type EgressProxy, type ResolveHost, resolveWithSystem, startEgressProxy } from "../egress/proxy.js";
import { createRunCertificateAuthority } from "../egress/run-ca.js";
import { PYTHON_EGRESS_RELAY, provideSupportFile } from "../host/bootstrap.js";
import { tempDirPrefix } from "../host/temp-dirs.js";
import { MIB } from "../limits.js";
import type { SandboxLimits } from "../types.js";
import { unavailableResult } from "./run-child.js";

/** Where a sandbox sees the folder that holds the run's proxy socket. */
export const EGRESS_MOUNT = "/run/selfheal-egress";
const SOCKET_NAME = "proxy.sock";
/**
 * The port inside a sandbox where the run's first interpreter relays to the proxy's socket, for
 * clients that know only a TCP proxy (`requests`, curl). Each run has its own network namespace.
 */
export const EGRESS_RELAY_PORT = 3128;
export const NODE_EGRESS_PRELOAD_FILE = "selfheal-egress.cjs";
/** Beside the socket: the relay as a script, for a sandbox whose Python starts without our bootstrap (a container). */
export const PYTHON_EGRESS_RELAY_FILE = "relay.py";
/**
 * Names the proxy resolves to the given addresses instead of asking DNS (`data.test=127.0.0.1,...`),
 * as curl's `--resolve` does; such a name may reach a private address, since the user named it.
 * Tests point their names at loopback servers with it.
 */
export const EGRESS_RESOLVE_VARIABLE = "SELFHEAL_EGRESS_RESOLVE";

/** The run's CA certificate, and the system's CAs with it, beside the socket. */
const RUN_CA_FILE = "run-ca.pem";
const CA_BUNDLE_FILE = "ca-bundle.pem";
/** The CAs the system trusts, as one PEM file, where Debian, Fedora and Alpine keep it. */
const SYSTEM_CA_BUNDLES = [
  "/etc/ssl/certs/ca-certificates.crt",
  "/etc/pki/tls/certs/ca-bundle.crt",
  "/etc/ssl/cert.pem",
];
/**
 * A PEM file of CAs the proxy trusts beside the system's when it connects on for an entry with
 * `tls: "terminate"`: a private CA of the user's own hosts (and the tests' servers').
 */
export const EGRESS_CA_FILE_VARIABLE = "SELFHEAL_EGRESS_CA_FILE";

/** How a backend whose sandbox binds the proxy's folder (gVisor, a container) reaches it. */
export const SOCKET_EGRESS: RunEgressOptions = { via: "socket", enforced: true, supportDir: EGRESS_MOUNT };

/** A run's allowlist could not be made into a proxy: the run does not start, and says why. */
export class EgressSetupError extends Error {}

/** The proxy of one run, and what its sandbox needs to reach it. */
export interface RunEgress {
  /** Host folder with the proxy's socket, for a backend to bind at EGRESS_MOUNT; null where the proxy listens on TCP. */
  socketDir: string | null;
  /** The variables the program's environment gets: the proxy for the usual clients, and the Node preload. */
  env: Record<string, string>;
  report(): EgressReport;
  /** Ends every connection and removes the socket's folder. */
  close(): Promise<void>;
}

export interface RunEgressOptions {
  /**
   * "socket": the proxy listens on a unix socket in a folder of its own, which an isolated backend
   * binds into its sandbox (the only way out of a namespace with no network); "tcp": on a port of
   * 127.0.0.1, for the process backend, whose programs share the host's network.
   */
  via: "socket" | "tcp";
  /** Whether the backend leaves the program no other way out; the report says so. */
  enforced: boolean;
  /** The support folder as the program sees it, where the Node preload is when there is no socket folder to put it in. */
  supportDir: string;
  env?: NodeJS.ProcessEnv;
}

/**
 * Starts the egress proxy of one run for `allowHosts` under the run's connection and byte limits.
 * Headers an entry names are read from the host's environment here, and live only in this
 * process's proxy; a variable that is not set is an EgressSetupError.
 */
export async function startRunEgress(
  allowHosts: readonly AllowHostInput[],
  limits: Pick<SandboxLimits, "maxConnections" | "maxNetworkMb">,
  options: RunEgressOptions,
): Promise<RunEgress> {
  const env = options.env ?? process.env;
  const allowlist = withSecretHeaders(allowHosts, env);
  const overrides = resolveOverrides(env[EGRESS_RESOLVE_VARIABLE]);
  const listedAddresses = new Set(
    allowlist.filter((entry) => entry.kind !== "name" && entry.kind !== "wildcard").map((entry) => entry.host),
  );
  // The run's own CA, only where an entry asks the proxy to end its TLS (and so add its headers to HTTPS).
  const ca = allowlist.some((entry) => entry.terminateTls) ? createRunCertificateAuthority() : null;
  const filesDir = options.via === "socket" || ca ? await mkdtemp(tempDirPrefix("egress")) : null;
  const socketDir = options.via === "socket" ? filesDir : null;
  /** Where the program finds a file of `filesDir`. */
  const seen = (name: string) => (socketDir ? `${EGRESS_MOUNT}/${name}` : join(filesDir ?? "", name));
  let proxy: EgressProxy;
  try {
    proxy = await startEgressProxy({
      allowlist,
      listen: socketDir ? { path: join(socketDir, SOCKET_NAME) } : { port: 0 },
      maxConnections: limits.maxConnections,
      maxBytes: limits.maxNetworkMb * MIB,
      allowPrivateAddresses: (host) => overrides.has(host) || listedAddresses.has(host),
      ...(overrides.size > 0 ? { resolve: resolveWith(overrides) } : {}),
      ...(ca ? { tls: { issue: (host: string) => ca.issue(host), trusted: await trustedCas(env) } } : {}),
    });
    if (ca && filesDir) {
      await writeFile(join(filesDir, RUN_CA_FILE), ca.certificate, { mode: 0o444 });
      await writeFile(join(filesDir, CA_BUNDLE_FILE), `${await systemCaBundle()}\n${ca.certificate}`, { mode: 0o444 });
    }
    if (socketDir) {
      // Beside the socket, so that every sandbox that binds the folder finds them, whatever its image.
      await writeFile(join(socketDir, NODE_EGRESS_PRELOAD_FILE), NODE_EGRESS_PRELOAD, { mode: 0o444 });
      await writeFile(join(socketDir, PYTHON_EGRESS_RELAY_FILE), PYTHON_EGRESS_RELAY, { mode: 0o444 });
      // The program runs as another uid: it must be able to enter the folder and write to the socket.
      await chmod(socketDir, 0o755);
      await chmod(join(socketDir, SOCKET_NAME), 0o666);
    } else {
      provideSupportFile(NODE_EGRESS_PRELOAD_FILE, NODE_EGRESS_PRELOAD);
    }
  } catch (error) {
    if (filesDir) await rm(filesDir, { recursive: true, force: true });
    throw error;
  }
  const { address } = proxy;
  const preload = socketDir
    ? `${EGRESS_MOUNT}/${NODE_EGRESS_PRELOAD_FILE}`
    : join(options.supportDir, NODE_EGRESS_PRELOAD_FILE);
  const proxyUrl =
    address.kind === "tcp" ? `http://127.0.0.1:${address.port}` : `http://127.0.0.1:${EGRESS_RELAY_PORT}`;
  return {
    socketDir,
    env: {
      HTTP_PROXY: proxyUrl,
      HTTPS_PROXY: proxyUrl,
      http_proxy: proxyUrl,
      https_proxy: proxyUrl,
      // The program's own servers on its loopback are reached directly, by every client alike.
      NO_PROXY: "localhost,127.0.0.1,::1",
      no_proxy: "localhost,127.0.0.1,::1",
      ...(socketDir ? { SELFHEAL_EGRESS_SOCKET: `${EGRESS_MOUNT}/${SOCKET_NAME}` } : {}),
      NODE_OPTIONS: `--require=${preload}`,
      // The run trusts its CA beside the system's: OpenSSL (Python's ssl, curl), requests, Node.
      ...(ca
        ? {
            SSL_CERT_FILE: seen(CA_BUNDLE_FILE),
            REQUESTS_CA_BUNDLE: seen(CA_BUNDLE_FILE),
            CURL_CA_BUNDLE: seen(CA_BUNDLE_FILE),
            NODE_EXTRA_CA_CERTS: seen(RUN_CA_FILE),
          }
        : {}),
    },
    report: () => ({
      connections: proxy.connections(),
      unrecordedRefusals: proxy.unrecordedRefusals(),
      enforced: options.enforced,
    }),
    close: async () => {
      await proxy.close();
      if (filesDir) await rm(filesDir, { recursive: true, force: true });
    },
  };
}

/**
 * Runs `body` with the run's proxy when `allowHosts` names hosts (undefined otherwise), and gives
 * its result what the program did on the network; the proxy is closed however the run ends. A list
 * that cannot become a proxy (a header's variable unset) is the run's `unavailable` result.
 */
export async function withRunEgress(
  allowHosts: readonly AllowHostInput[],
  limits: Pick<SandboxLimits, "maxConnections" | "maxNetworkMb">,
  options: RunEgressOptions,
  startedAt: number,
  body: (egress: RunEgress | undefined) => Promise<RunResult>,
): Promise<RunResult> {
  if (allowHosts.length === 0) return body(undefined);
  let egress: RunEgress;
  try {
    egress = await startRunEgress(allowHosts, limits, options);
  } catch (error) {
    if (error instanceof EgressSetupError) return unavailableResult(error.message, startedAt);
    throw error;
  }
  try {
    return withEgressReport(await body(egress), egress, limits);
  } finally {
    await egress.close();
  }
}

/**
 * The run's result with what its program did on the network; where a limit of the run's stopped
 * it, a line on stderr says which, as the other limits do, so the fixer learns why requests failed.
 */
export function withEgressReport(
  result: RunResult,
  egress: RunEgress,
  limits: Pick<SandboxLimits, "maxConnections" | "maxNetworkMb">,
): RunResult {
  const report = egress.report();
  const reasons = report.connections.map((connection) => connection.reason ?? "");
  const notes: string[] = [];
  if (reasons.some((reason) => reason.includes("connection limit"))) {
    notes.push(
      `[selfheal] the run used its ${limits.maxConnections} connections through the egress proxy (maxConnections); later ones were refused`,
    );
  }
  if (reasons.some((reason) => reason.includes("byte limit"))) {
    notes.push(
      `[selfheal] the run moved ${limits.maxNetworkMb} MiB through the egress proxy (maxNetworkMb); its connections were cut and later ones refused`,
    );
  }
  const stderr = notes.length > 0 ? `${result.stderr}\n${notes.join("\n")}\n` : result.stderr;
  return { ...result, stderr, egress: report };
}

/** The list, its headers' values read from `env`. */
function withSecretHeaders(allowHosts: readonly AllowHostInput[], env: NodeJS.ProcessEnv): AllowlistEntry[] {
  const parsed = parseAllowlist(allowHosts);
  if (!parsed.ok) throw new EgressSetupError(parsed.errors.join("; "));
  return parsed.allowlist.map((entry) => {
    if (!entry.headers) return entry;
    const read = headersFromEnvironment(entry.headers, env);
    if ("missing" in read) {
      const names = read.missing.join(", ");
      throw new EgressSetupError(
        `allowHosts entry ${JSON.stringify(entry.written)} takes a header from ${names}, which ${read.missing.length === 1 ? "is" : "are"} not set in selfheal's environment`,
      );
    }
    return { ...entry, headers: read.headers };
  });
}

/** The system's CA bundle, else Node's own roots: what the run's programs trust beside its CA. */
async function systemCaBundle(): Promise<string> {
  for (const path of SYSTEM_CA_BUNDLES) {
    try {
      return await readFile(path, "utf8");
    } catch {
      // not here; the next place
    }
  }
  return rootCertificates.join("\n");
}

async function trustedCas(env: NodeJS.ProcessEnv): Promise<string[]> {
  const path = env[EGRESS_CA_FILE_VARIABLE];
  if (!path) return [];
  try {
    return [await readFile(path, "utf8")];
  } catch (error) {
    throw new EgressSetupError(`${EGRESS_CA_FILE_VARIABLE} (${path}) cannot be read: ${(error as Error).message}`);
  }
}

/** `name=address,name=address` as a map; entries without `=` are ignored. */
function resolveOverrides(text: string | undefined): Map<string, string> {
  const overrides = new Map<string, string>();
  for (const pair of (text ?? "").split(",")) {
    const [name = "", address = ""] = pair.split("=").map((part) => part.trim());
    if (name !== "" && address !== "") overrides.set(name.toLowerCase(), address);
  }
  return overrides;
}

function resolveWith(overrides: Map<string, string>): ResolveHost {
  return async (host) => {
    const address = overrides.get(host);
    return address === undefined ? resolveWithSystem(host) : [address];
  };
}
