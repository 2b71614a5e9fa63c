import { type Command, InvalidArgumentError } from "commander";
import { addModelCallOptions, allowHostOption } from "../options.js";
import { addStoreOptions } from "../store-options.js";
import { packageVersion } from "../version.js";
import type { McpFlags } from "./mcp.js";
import { SUMMARIES } from "./summaries.js";

// What `selfheal mcp` takes, declared with nothing heavy behind it (see run-command.ts).

/** `selfheal mcp`. */
export function registerMcpCommand(program: Command): void {
  const command = program
    .command("mcp")
    .description(SUMMARIES.mcp)
    .option("--http", "serve over Streamable HTTP instead of stdio")
    .option("--port <port>", "with --http: the port (0: any free one)", portNumber, 3000)
    .option("--host <address>", "with --http: the address to listen on; loopback unless you say otherwise", "127.0.0.1")
    // The server's, not a client's: a client may not open the server's network to its programs.
    .addOption(allowHostOption());
  addStoreOptions(addModelCallOptions(command)).action(async (flags: McpFlags) => {
    process.exitCode = await (await import("./mcp.js")).serveMcp(flags, packageVersion());
  });
}

/** A TCP port, or 0 for any free one. */
function portNumber(value: string): number {
  const port = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!(port <= 65_535)) throw new InvalidArgumentError("must be a port number from 0 to 65535 (0: any free one)");
  return port;
}
