import { spawn, spawnSync } from "node:child_process";
import { closeSync, openSync } from "node:fs";

/**
 * A command the host probes run (bwrap in a test sandbox, mount, the seccomp filter's builder).
 * The probes are written once, as generators that yield these commands; `runSteps` runs them
 * without blocking the event loop (what `createSandbox` uses), `runStepsSync` blocks (for the
 * synchronous `probeBwrap()` and a `describe()` asked before the sandbox was prepared).
 */
export interface HostCommand {
  file: string;
  args: string[];
  env?: Record<string, string>;
  timeoutMs: number;
  /** A file opened read-only as the command's fd 4 (bwrap reads its seccomp filter there). */
  fd4?: string | null;
}

export interface HostCommandOutcome {
  /** The exit status; null when it could not start, was killed or timed out. */
  status: number | null;
  stderr: string;
  /** Why it could not start (ENOENT, a timeout), when it could not. */
  error?: string;
}

export type HostSteps<T> = Generator<HostCommand, T, HostCommandOutcome>;

export async function runSteps<T>(steps: HostSteps<T>): Promise<T> {
  let next = steps.next();
  while (!next.done) next = steps.next(await runCommand(next.value));
  return next.value;
}

export function runStepsSync<T>(steps: HostSteps<T>): T {
  let next = steps.next();
  while (!next.done) next = steps.next(runCommandSync(next.value));
  return next.value;
}

function withFd4<T>(command: HostCommand, use: (fd: number | null) => T): T {
  const fd = command.fd4 ? openSync(command.fd4, "r") : null;
  try {
    return use(fd);
  } finally {
    // The child has its own copy once it is spawned.
    if (fd !== null) closeSync(fd);
  }
}

function runCommandSync(command: HostCommand): HostCommandOutcome {
  const ran = withFd4(command, (fd) =>
    spawnSync(command.file, command.args, {
      timeout: command.timeoutMs,
      stdio: ["ignore", "ignore", "pipe", "ignore", fd ?? "ignore"],
      ...(command.env ? { env: command.env } : {}),
    }),
  );
  return {
    status: ran.status,
    stderr: ran.stderr?.toString() ?? "",
    ...(ran.error ? { error: ran.error.message } : {}),
  };
}

function runCommand(command: HostCommand): Promise<HostCommandOutcome> {
  return new Promise((resolve) => {
    const child = withFd4(command, (fd) =>
      spawn(command.file, command.args, {
        timeout: command.timeoutMs,
        stdio: ["ignore", "ignore", "pipe", "ignore", fd ?? "ignore"],
        ...(command.env ? { env: command.env } : {}),
      }),
    );
    let stderr = "";
    let error: string | undefined;
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on("error", (failure) => {
      error = failure.message;
      // A command that never started emits no close.
      if (child.pid === undefined) resolve({ status: null, stderr, error });
    });
    child.on("close", (status) => resolve({ status, stderr, ...(error ? { error } : {}) }));
  });
}
