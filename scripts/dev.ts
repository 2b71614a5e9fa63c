// `npm run dev [-- --port N] [--host H]`: the LangGraph dev server for Studio, started so that a
// taken port is one line and exit 1 instead of a stack trace from a server that never stops, and
// so that Ctrl-C stops the server and every worker it started.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { constants } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseEnv } from "node:util";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const LANGGRAPH_CLI = fileURLToPath(
  new URL("../node_modules/@langchain/langgraph-cli/dist/cli/cli.mjs", import.meta.url),
);
const DEFAULT_PORT = 2024;
const DEFAULT_HOST = "localhost";

export interface DevOptions {
  port: number;
  host: string;
  /** Anything else is handed to `langgraphjs dev` as given (e.g. `--no-reload`, `--tunnel`). */
  rest: string[];
}

/** Reads `--port N`, `-p N`, `--port=N` and the same for `--host`/`-h`, as `langgraphjs dev` spells them. */
export function parseDevArgs(argv: string[]): DevOptions | { error: string } {
  const options: DevOptions = { port: DEFAULT_PORT, host: DEFAULT_HOST, rest: [] };
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index]!;
    const [flag, inline] =
      arg.startsWith("--") && arg.includes("=")
        ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)]
        : [arg, undefined];
    if (flag !== "--port" && flag !== "-p" && flag !== "--host" && flag !== "-h") {
      options.rest.push(arg);
      continue;
    }
    const value = inline ?? argv[++index];
    if (value === undefined || value === "") return { error: `${flag} needs a value` };
    if (flag === "--host" || flag === "-h") {
      options.host = value;
    } else {
      const port = /^\d+$/.test(value) ? Number(value) : NaN;
      if (!(port >= 1 && port <= 65_535))
        return { error: `--port must be a number from 1 to 65535, not ${JSON.stringify(value)}` };
      options.port = port;
    }
  }
  return options;
}

/** Null when the server could listen there now; otherwise what stands in the way, as one line. */
export function portProblem(port: number, host: string): Promise<string | null> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "EADDRINUSE") {
        resolve(
          `port ${port} on ${host} is already in use (another dev server?); pick another with \`npm run dev -- --port ${port + 1}\``,
        );
      } else {
        resolve(`cannot listen on ${host}:${port}: ${error.code ?? error.message}`);
      }
    });
    probe.listen(port, host, () => probe.close(() => resolve(null)));
  });
}

/**
 * The environment for the server: `.env` beside langgraph.json when there is one, under whatever
 * is already set (as langgraph-cli itself reads it). Read here rather than through langgraph.json's
 * `env`, which warns when the file is missing, and a missing `.env` is the normal case.
 */
export function serverEnv(root: string = ROOT, env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const envFile = join(root, ".env");
  const fromFile = existsSync(envFile) ? parseEnv(readFileSync(envFile, "utf8")) : {};
  return { ...fromFile, ...env, LANGGRAPH_CLI_NO_ANALYTICS: "1" };
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // The group is gone already.
  }
}

async function main(): Promise<number> {
  const options = parseDevArgs(process.argv.slice(2));
  if ("error" in options) {
    process.stderr.write(`selfheal dev: ${options.error}\n`);
    return 2;
  }
  const problem = await portProblem(options.port, options.host);
  if (problem) {
    process.stderr.write(`selfheal dev: ${problem}\n`);
    return 1;
  }

  // Its own process group: the server starts workers of its own, and a group is how all of them
  // are stopped together; a terminal's Ctrl-C no longer reaches it, so signals are passed on. A
  // SIGTERM to `npm run dev` reaches this launcher because package.json execs it: with a shell
  // between, npm signalled the shell, which died and left the launcher and the server running.
  const server = spawn(
    process.execPath,
    [LANGGRAPH_CLI, "dev", "--no-browser", "--port", String(options.port), "--host", options.host, ...options.rest],
    { cwd: ROOT, env: serverEnv(), detached: true, stdio: ["ignore", "inherit", "inherit"] },
  );
  let signalled = 0;
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    // A second Ctrl-C does not wait for a graceful stop.
    process.on(signal, () => signalGroup(server, ++signalled > 1 ? "SIGKILL" : signal));
  }
  process.once("exit", () => signalGroup(server, "SIGKILL"));

  return new Promise((resolve) => {
    server.once("error", (error) => {
      process.stderr.write(`selfheal dev: cannot start langgraph-cli: ${error.message}\n`);
      resolve(1);
    });
    server.once("exit", (code, signal) => {
      // Whatever the server left running in its group goes with it.
      signalGroup(server, "SIGKILL");
      resolve(code ?? 128 + (signal ? constants.signals[signal] : 0));
    });
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.exitCode = await main();
}
