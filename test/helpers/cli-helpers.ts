import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { scratchDir } from "./scratch.js";

export const REPO = fileURLToPath(new URL("../..", import.meta.url));
export const BIN = fileURLToPath(new URL("../../bin/selfheal.js", import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The parent's environment without any model configuration, plus what the test adds. npm's own
 * variables go too: `npm test` sets them, and a binary started by path, as from a shell, sees none.
 */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of ["npm_command", "npm_lifecycle_event", "npm_package_name"]) delete env[key];
  // The colour switches too: each test says which look it expects.
  for (const key of [
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "SELFHEAL_MODEL",
    "SELFHEAL_DB",
    "SELFHEAL_POSTGRES_URL",
    "SELFHEAL_MODEL_RETRIES",
    "SELFHEAL_MODEL_TIMEOUT_MS",
    "NO_COLOR",
    "FORCE_COLOR",
  ])
    delete env[key];
  return { ...env, ...extra };
}

export interface RunningCli {
  child: ChildProcess;
  /** What the process has printed to stderr so far. */
  stderr(): string;
  /** Resolves when the process exits, with everything it printed. */
  done: Promise<CliResult>;
}

interface CliOptions {
  env?: Record<string, string>;
  /** A fresh directory when absent, so a run never lands in the repository's own .selfheal/. */
  cwd?: string;
  /** Written to stdin, which then closes (EOF at once when absent). */
  input?: string;
}

/** Starts the real `selfheal` binary with no terminal attached and returns at once, for tests that kill it mid-run. */
export function startCli(args: string[], options: CliOptions = {}): RunningCli {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: options.cwd ?? scratchDir("cwd"),
    env: cleanEnv(options.env),
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk) => (stdout += chunk));
  child.stderr?.on("data", (chunk) => (stderr += chunk));
  const done = new Promise<CliResult>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
  child.stdin?.end(options.input ?? "");
  return { child, stderr: () => stderr, done };
}

/** Runs the real `selfheal` binary to the end with no terminal attached. */
export function runCli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  return startCli(args, options).done;
}

/**
 * Polls until `condition` holds; fails with `what` after `timeoutMs`. The default is generous: it
 * bounds a hang, not the speed, and a CLI under a busy CI machine's load can take seconds to start.
 */
export async function waitFor(condition: () => boolean, what: string, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Runs the real binary inside a pseudo-terminal (util-linux `script`), so it sees a person at a
 * keyboard; each reply is typed once its prompt has appeared, in order. Everything the program
 * printed, stdout and stderr alike, comes back as `stdout`. The terminal is sized as a real one
 * is: a pty nobody sized reports 0 columns, which turns the spinner off.
 */
export function runInTerminal(
  args: string[],
  replies: Array<{ after: string; type: string }>,
  options: { env?: Record<string, string> } = {},
): Promise<CliResult> {
  const quote = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;
  const command = `stty cols 120 rows 40; ${[process.execPath, BIN, ...args].map(quote).join(" ")}`;
  return new Promise((resolve, reject) => {
    const child = spawn("script", ["-qfec", command, "/dev/null"], {
      cwd: scratchDir("cwd"),
      env: cleanEnv({ TERM: "xterm-256color", ...options.env }),
      stdio: ["pipe", "pipe", "pipe"],
    });
    let screen = "";
    let typedUpTo = 0;
    const pending = [...replies];
    child.stdout.on("data", (chunk) => {
      screen += chunk;
      const next = pending[0];
      const at = next ? screen.indexOf(next.after, typedUpTo) : -1;
      if (next && at >= 0) {
        pending.shift();
        typedUpTo = at + next.after.length;
        child.stdin.write(next.type);
      }
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout: screen, stderr: "" }));
  });
}

/** A port nothing listens on right now, for a server the test starts itself. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === "string") throw new Error("no free port");
  return address.port;
}
