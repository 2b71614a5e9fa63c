/**
 * A sandbox backend of your own, in one file: programs run as plain child processes, with only the
 * limits Node can hold by itself (the wall clock and the output cap). Its describe() says so, and
 * the conformance suite (conformance.test.ts beside it) holds it to exactly that. It is no
 * isolation: use it where the code is yours, or as the start of a backend that calls a real one.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { once } from "node:events";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { createInterface } from "node:readline";

import {
  CODE_FILE_NAME,
  collectArtifacts,
  type Language,
  parseError,
  RUN_CANCELLED_NOTE,
  type RunHooks,
  type RunRequest,
  type RunResult,
  resolveLimits,
  type Sandbox,
  type SandboxIsolation,
  type SandboxLimits,
  safeRelativePath,
} from "../../src/index.js";

const COMMAND: Record<Language, string[]> = {
  python: ["python3", "-u", CODE_FILE_NAME.python],
  javascript: [process.execPath, CODE_FILE_NAME.javascript],
};

/** How long output may still arrive after the program exited. */
const DRAIN_GRACE_MS = 200;

const NOT_HELD = "none: a plain child process; nothing but the wall clock bounds it";

export class ChildProcessSandbox implements Sandbox {
  readonly kind = "child-process";
  private readonly limits: SandboxLimits;

  constructor(options: { limits?: Partial<SandboxLimits> } = {}) {
    this.limits = resolveLimits(options.limits);
  }

  describe(): SandboxIsolation {
    return {
      kind: this.kind,
      memory: { scope: "none", by: NOT_HELD },
      processes: { scope: "none", by: NOT_HELD },
      cpu: { scope: "none", by: NOT_HELD },
      disk: { scope: "none", by: `${NOT_HELD}; it writes where the user may` },
      syscalls: { scope: "none", by: "none: the program runs as the calling user" },
      notes: ["no isolation: the program sees the host's files, network and environment"],
    };
  }

  async run(request: RunRequest, hooks: RunHooks = {}): Promise<RunResult> {
    const startedAt = performance.now();
    const limits = resolveLimits({
      ...this.limits,
      ...request.limits,
      timeoutMs: request.timeoutMs ?? request.limits?.timeoutMs ?? this.limits.timeoutMs,
    });
    const workDir = await mkdtemp(join(tmpdir(), "child-process-sandbox-"));
    try {
      await writeFiles(workDir, request);
      if (hooks.signal?.aborted) return cancelled(startedAt);
      const [command = "", ...args] = COMMAND[request.language];
      // Its own process group, so one kill reaches every process the program starts.
      const child = spawn(command, args, {
        cwd: workDir,
        detached: true,
        // TMPDIR too: a temporary file one run leaves must not be there for the next.
        env: { PATH: process.env.PATH ?? "", HOME: workDir, TMPDIR: workDir },
      });
      let endedBy: "timeout" | "killed" | "output_limit" | null = null;
      const killAll = (reason: "timeout" | "killed" | "output_limit") => {
        endedBy ??= reason;
        killGroup(child.pid);
      };
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        child.once("exit", (code, signal) => resolve({ code, signal })),
      );
      const timer = setTimeout(() => killAll("timeout"), limits.timeoutMs);
      const onAbort = () => killAll("killed");
      hooks.signal?.addEventListener("abort", onAbort);
      child.stdin.on("error", () => undefined);
      child.stdin.end(request.stdin ?? "");
      const [stdout, stderr, exit] = await Promise.all([
        // A program that floods its output is stopped at the cap, not left to run to the wall clock.
        capture(child.stdout, "stdout", limits.maxOutputBytes, hooks, () => killAll("output_limit")),
        capture(child.stderr, "stderr", limits.maxOutputBytes, hooks, () => killAll("output_limit")),
        exited.then(async (exit) => {
          // A daemon the program started may hold its pipes open forever: once the program has
          // exited, its group goes, and what is still in the pipes has a moment to arrive.
          killGroup(child.pid);
          await drained(child, DRAIN_GRACE_MS);
          return exit;
        }),
      ]);
      clearTimeout(timer);
      hooks.signal?.removeEventListener("abort", onAbort);
      const truncated = stdout.truncated || stderr.truncated;
      const error = exit.code !== 0 && endedBy === null ? parseError(request.language, stderr.text) : null;
      const status =
        endedBy ?? (truncated ? "output_limit" : exit.code === 0 ? "ok" : exit.signal ? "killed" : "error");
      const result: RunResult = {
        status,
        exitCode: exit.code,
        signal: exit.signal,
        stdout: stdout.text,
        stderr: endedBy === "killed" ? `${stderr.text}\n${RUN_CANCELLED_NOTE}\n` : stderr.text,
        truncated,
        durationMs: performance.now() - startedAt,
        ...(error ? { error } : {}),
      };
      if (request.collectArtifacts) result.artifacts = await collectArtifacts(workDir, request.collectArtifacts);
      return result;
    } finally {
      await rm(workDir, { recursive: true, force: true });
    }
  }

  /** Nothing is kept between runs. */
  async close(): Promise<void> {}
}

/** Files, then inputs (read-only), then the code last, so no file can replace it. */
async function writeFiles(workDir: string, request: RunRequest): Promise<void> {
  const place = async (name: string, content: string | Uint8Array) => {
    const path = join(workDir, safeRelativePath(name));
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, content);
    return path;
  };
  for (const [name, content] of Object.entries(request.files ?? {})) await place(name, content);
  for (const input of request.inputs ?? []) await chmod(await place(input.name, input.content), 0o444);
  if (request.collectArtifacts) await mkdir(join(workDir, "out"));
  await place(CODE_FILE_NAME[request.language], request.code);
}

/** Reads one stream line by line, keeping at most `cap` characters of it; calls `onOverflow` once past the cap. */
async function capture(
  stream: NodeJS.ReadableStream,
  name: "stdout" | "stderr",
  cap: number,
  hooks: RunHooks,
  onOverflow: () => void,
): Promise<{ text: string; truncated: boolean }> {
  let text = "";
  let truncated = false;
  // readline decodes UTF-8 with replacement characters, and hands over each line as it is printed.
  const lines = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
  // A pipe destroyed after the grace (drained) ends the reading too.
  stream.once("close", () => lines.close());
  let last = "";
  stream.on("data", (chunk: Buffer) => {
    last = chunk.toString("utf8").slice(-1);
  });
  for await (const line of lines) {
    hooks.onOutput?.(name, line);
    const piece = `${line}\n`;
    if (truncated) continue;
    if (text.length + piece.length > cap) {
      text += piece.slice(0, cap - text.length);
      truncated = true;
      onOverflow();
    } else text += piece;
  }
  // readline adds no newline the program did not print.
  if (!truncated && text.endsWith("\n") && last !== "\n") text = text.slice(0, -1);
  return { text, truncated };
}

/** Waits for stdout and stderr to close, at most `graceMs`, then closes them. */
async function drained(child: ChildProcessWithoutNullStreams, graceMs: number): Promise<void> {
  const streams = [child.stdout, child.stderr];
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all(streams.map((stream) => (stream.closed ? undefined : once(stream, "close")))),
    new Promise((resolve) => {
      timer = setTimeout(resolve, graceMs);
    }),
  ]);
  clearTimeout(timer);
  for (const stream of streams) stream.destroy();
}

/** Kills the program's whole process group, which may be gone already. */
function killGroup(pid: number | undefined): void {
  try {
    if (pid) process.kill(-pid, "SIGKILL");
  } catch {
    // the group is gone already
  }
}

function cancelled(startedAt: number): RunResult {
  const stderr = `${RUN_CANCELLED_NOTE}\n`;
  return {
    status: "killed",
    exitCode: null,
    signal: null,
    stdout: "",
    stderr,
    truncated: false,
    durationMs: performance.now() - startedAt,
  };
}
