import type { Command } from "commander";
import { addModelCallOptions, positiveInteger } from "../options.js";
import { addStoreOptions } from "../store-options.js";
import { summaryOf } from "./catalog.js";
import type { McpFlags } from "./mcp.js";

// What `selfheal mcp` takes, declared with nothing heavy behind it (see run-command.ts).

/** `selfheal mcp`. */
export function registerMcpCommand(program: Command, version: string): void {
  const command = program
    .command("mcp")
    .description(summaryOf("mcp"))
    .option("--http", "serve over Streamable HTTP instead of stdio")
    .option("--port <port>", "with --http: the port (0: any free one)", portNumber, 3000)
    .option(
      "--host <address>",
      "with --http: the address to listen on; loopback unless you say otherwise",
      "127.0.0.1",
    );
  addStoreOptions(addModelCallOptions(command)).action(async (flags: McpFlags) => {
    process.exitCode = await (await import("./mcp.js")).serveMcp(flags, version);
  });
}

function portNumber(value: string): number {
  return value === "0" ? 0 : positiveInteger(value);
}
