import { randomBytes } from "node:crypto";
import { openRunStore, resolveStoreLocation } from "../../store/index.js";
import { allowHostsFromFlags } from "../flag-settings.js";
import { type ModelCallFlags, modelCallsFromFlags } from "../options.js";
import type { StoreFlags } from "../store-options.js";
import { EXIT } from "../stream-run.js";

/** The bearer token HTTP clients must send; required beyond loopback, where one is made if this is unset. */
const MCP_TOKEN_VARIABLE = "SELFHEAL_MCP_TOKEN";

export interface McpFlags extends StoreFlags, ModelCallFlags {
  http?: boolean;
  /** `--allow-host`: the hosts every run's programs may reach (the server's `allowHosts`). */
  allowHost?: string[];
  port: number;
  host: string;
}

/** Resolves on the first SIGINT or SIGTERM. */
function untilStopped(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
}

/**
 * `selfheal mcp`: the agent as an MCP server, in the same run store as the CLI. Over stdio it
 * serves the client that started it until that client closes stdin; over HTTP, any number of
 * clients until SIGINT or SIGTERM. Stdout belongs to the protocol: every note goes to stderr.
 */
export async function serveMcp(flags: McpFlags, version: string): Promise<number> {
  // Loaded here, not with the CLI: no other command should pay for the MCP SDK at start-up.
  const { McpRuns, serveHttp, serveStdio } = await import("../../mcp/index.js");
  const allowHosts = flags.allowHost ? allowHostsFromFlags(flags.allowHost) : undefined;
  const store = await openRunStore(resolveStoreLocation(flags));
  const runs = new McpRuns({
    store,
    modelCalls: modelCallsFromFlags(flags),
    ...(allowHosts ? { serverSettings: { allowHosts } } : {}),
  });
  try {
    if (!flags.http) {
      await serveStdio(runs, { version });
      return EXIT.passed;
    }
    // Beyond loopback a token is required: $SELFHEAL_MCP_TOKEN, else one made now and shown once.
    const chosen = process.env[MCP_TOKEN_VARIABLE]?.trim() || undefined;
    const beyondLoopback = !["127.0.0.1", "localhost", "::1"].includes(flags.host);
    const token = chosen ?? (beyondLoopback ? randomBytes(32).toString("base64url") : undefined);
    const server = await serveHttp(runs, { version }, { host: flags.host, port: flags.port, token });
    process.stderr.write(`selfheal mcp: serving MCP over Streamable HTTP at ${server.url}\n`);
    if (token) {
      process.stderr.write(
        chosen
          ? `selfheal mcp: clients must send Authorization: Bearer <the token in $${MCP_TOKEN_VARIABLE}>\n`
          : `selfheal mcp: clients must send Authorization: Bearer ${token}\n(set $${MCP_TOKEN_VARIABLE} to choose it; this one is shown only now)\n`,
      );
    }
    await untilStopped();
    await server.close();
    return EXIT.passed;
  } finally {
    await runs.close();
    await store.close();
  }
}
