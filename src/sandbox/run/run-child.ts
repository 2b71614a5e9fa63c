import type { ChildProcess } from "node:child_process";
import { Socket } from "node:net";
import { constants as osConstants } from "node:os";
import { performance } from "node:perf_hooks";
import { parseError } from "../parse-error.js";
import type { Language, ParsedError, RunHooks, RunRequest, RunResult, RunStatus, SandboxLimits } from "../types.js";
import { type EndMarkScanner, endReportScanners } from "./end-report.js";
import { CappedOutput } from "./output.js";

/** How long to wait for buffered output after the program exited before giving up on the pipes. */
const DRAIN_GRACE_MS = 250;
/** How often a run's whole-tree CPU time is compared with its budget. */
const CPU_POLL_MS = 100;
/** How far into a run the CPU budget's baseline is read (see `watchCpu`). */
const CPU_BASELINE_DELAY_MS = 5;

/** Kills a detached child's whole process group; one already gone is fine. */
export function killProcessGroup(child: ChildProcess): void {
  if (child.pid === undefined) {
    // Not started (a failed spawn), or a forked run whose pid is not known yet: it stops itself.
    child.kill("SIGKILL");
    return;
  }
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // The group is already gone.
  }
}

/** Whether a child and all its pipes keep this process alive: an idle interpreter or sandbox must not. */
export function setReferenced(child: ChildProcess, referenced: boolean): void {
  if (referenced) child.ref();
  else child.unref();
  for (const stream of child.stdio) {
    if (stream instanceof Socket) {
      if (referenced) stream.ref();
      else stream.unref();
    }
  }
}

/** Whether Node has yet to see this child's exit. */
export function isAlive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Resolves once Node has seen the child's exit (at once if it has). */
export function waitForExit(child: ChildProcess): Promise<void> {
  if (!isAlive(child)) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

export interface LaunchedProgram {
  child: ChildProcess;
  /** Kills the whole run (process group or namespace); must be safe to call many times. */
  killAll(): void;
  /**
   * True when the child is a wrapper (bwrap, docker) that reports a program killed by signal N as
   * exit code 128 + N, so the signal can be recovered for the status. A program that itself exits
   * with 129-192 is then read as killed; no wrapper gives us a way to tell the two apart.
   */
  exitCodeEncodesSignal?: boolean;
  /** Limits the backend holds for the whole process tree (a cgroup); absent where only rlimits hold. */
  runLimits?: RunWideLimits;
  /** The mark the bootstrap ends its output with (end-report.ts), sent to it with "g". */
  endMark?: string;
  /** Whether the bootstrap takes the program with the go (`takesProgramWithGo`): Python's does. */
  takesProgramWithGo?: boolean;
  /**
   * Whether the run ended in the sandbox's own setup, before the program's first line, so that
   * starting it again runs nothing twice; absent where the backend cannot tell.
   */
  failedInSetup?(result: RunResult): boolean;
}

/** What a backend that caps the whole run (not each process) can tell about it. */
export interface RunWideLimits {
  memoryMb: number;
  cpuSeconds: number;
  /** True once the kernel killed a process of the run for going over the memory limit. */
  memoryExceeded(): boolean;
  /**
   * Starts the CPU budget now (a pre-warmed interpreter's loading is not the program's); false
   * where nothing accounts CPU time, so `cpuSecondsUsed` will answer null.
   */
  startCpuBudget(): boolean;
  /** CPU seconds the whole tree used since `startCpuBudget`; null where nothing accounts them. */
  cpuSecondsUsed(): number | null;
}

export interface CollectOptions {
  language: Language;
  stdin: string | Buffer | undefined;
  timeoutMs: number;
  maxOutputBytes: number;
  hooks?: RunHooks;
  /** `performance.now()` when `run()` was called, so the duration covers the whole run. */
  startedAt: number;
  /** Lets a pre-warmed program start; called first, as the watch is set up in the same turn of the loop. */
  release?: () => void;
}

/** What every backend tells `collectRun` of a request: its language, stdin, limits and hooks. */
export function collectOptionsFor(
  request: RunRequest,
  limits: SandboxLimits,
  startedAt: number,
  hooks: RunHooks | undefined,
): CollectOptions {
  return {
    language: request.language,
    stdin: request.stdin,
    timeoutMs: limits.timeoutMs,
    maxOutputBytes: limits.maxOutputBytes,
    ...(hooks ? { hooks } : {}),
    startedAt,
  };
}

/** How far past `cpuSeconds` the whole run may go before the sum is enforced; see `collectRun`. */
const WHOLE_RUN_CPU_GRACE_SECONDS = 0.3;

type KillReason = "timeout" | "output_limit" | "cpu_budget" | "cancelled";

/**
 * Watches a launched program to the end: feeds stdin, caps output, enforces the wall clock, and
 * turns what happened into a `RunResult`. It resolves on the child's 'exit' rather than on the
 * pipes closing, because a grandchild may keep the pipes open forever; after 'exit' the whole run
 * is killed and whatever output was already buffered is taken. A program with an end mark may end
 * sooner, on its bootstrap's end report (end-report.ts): all its output is in hand then, and the
 * whole run is killed the same way; the caller waits for the exit before reusing what it held.
 */
export function collectRun(program: LaunchedProgram, options: CollectOptions): Promise<RunResult> {
  const { child } = program;
  const stdout = new CappedOutput("stdout", options.maxOutputBytes, options.hooks?.onOutput);
  const stderr = new CappedOutput("stderr", options.maxOutputBytes, options.hooks?.onOutput);
  let killedFor: KillReason | null = null;

  const killFor = (reason: KillReason): void => {
    killedFor ??= reason;
    program.killAll();
  };

  return new Promise<RunResult>((resolve) => {
    // Its input first, whole and closed: a waiting interpreter's program then reads it at once,
    // not a turn of this loop after its go. A program may exit without reading its input; the
    // broken pipe is expected, not a failure.
    child.stdin?.on("error", () => undefined);
    if (options.stdin !== undefined && options.stdin.length > 0) child.stdin?.write(options.stdin);
    child.stdin?.end();
    // The program starts while the rest is set up: it cannot be missed, as Node keeps what the
    // pipes bring until the listeners below are on, and tells of an exit only on a later turn. A
    // run cancelled before it began never starts.
    if (!options.hooks?.signal?.aborted) options.release?.();
    let settled = false;
    const timer = setTimeout(() => killFor("timeout"), options.timeoutMs);
    const cancel = (): void => killFor("cancelled");
    const cancelSignal = options.hooks?.signal;
    if (cancelSignal?.aborted) cancel();
    else cancelSignal?.addEventListener("abort", cancel, { once: true });
    const { runLimits } = program;
    let cpuWatch: NodeJS.Timeout | undefined;
    const watchCpu = (): void => {
      // One read of the accounting: the baseline, which also tells whether there is one. It is read
      // a few milliseconds into the run, off its path (a run that ends sooner never reads it: a
      // cgroup read costs ~0.1 ms right after a sleep); what the program uses before it is far
      // inside the grace below.
      if (!runLimits?.startCpuBudget()) return;
      // RLIMIT_CPU holds per process; this holds for the sum, so N processes cannot take N budgets.
      // It waits a little past the budget: the sum also counts the sandbox's own start-up, and a lone
      // busy process should be stopped by its rlimit (SIGXCPU) every time, not by whichever fires first.
      cpuWatch = setInterval(() => {
        const used = runLimits.cpuSecondsUsed() ?? 0;
        if (used > runLimits.cpuSeconds + WHOLE_RUN_CPU_GRACE_SECONDS) killFor("cpu_budget");
      }, CPU_POLL_MS);
    };

    const report = program.endMark ? endReportScanners(program.endMark) : null;
    const finish = (
      exitCode: number | null,
      signal: NodeJS.Signals | null,
      spawnError?: Error,
      reported = false,
    ): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // The interval, or the timeout that would have started it.
      clearInterval(cpuWatch);
      cancelSignal?.removeEventListener("abort", cancel);
      // After an exit, what the pipes still hold is read once the rest of the run is killed. After
      // the report there is nothing left to read: the result goes first, the kill on the next turn.
      if (reported) setImmediate(() => program.killAll());
      else program.killAll();
      const drained = reported ? closePipes(child) : waitForPipes(child);
      void drained.then(() => {
        if (report) {
          pushOutput(stdout, report.stdout.flush());
          pushOutput(stderr, report.stderr.flush());
        }
        const stderrText = spawnError ? `${spawnError.message}\n` : stderr.finish();
        const stdoutText = stdout.finish();
        let effectiveSignal: string | null = signal;
        let effectiveExitCode = exitCode;
        if (program.exitCodeEncodesSignal && exitCode !== null && exitCode > 128) {
          const name = signalName(exitCode - 128);
          if (name) {
            effectiveSignal = name;
            effectiveExitCode = null;
          }
        }
        const truncated = stdout.overflowed || stderr.overflowed;
        const error = parseError(options.language, stderrText) ?? undefined;
        const memoryExceeded = runLimits?.memoryExceeded() ?? false;
        const status: RunStatus = spawnError
          ? "unavailable"
          : classifyRun({
              exitCode: effectiveExitCode,
              signal: effectiveSignal,
              killedFor,
              truncated,
              error,
              stderr: stderrText,
              memoryExceeded,
            });
        resolve({
          status,
          exitCode: effectiveExitCode,
          signal: effectiveSignal,
          stdout: stdoutText,
          stderr: stderrText + runLimitNote(runLimits, status, killedFor),
          truncated,
          durationMs: performance.now() - options.startedAt,
          ...(error && status !== "ok" ? { error } : {}),
        });
      });
    };

    const pushOutput = (output: CappedOutput, data: Buffer): void => {
      if (data.length > 0 && !output.push(data)) killFor("output_limit");
    };
    const watch = (output: CappedOutput, scanner: EndMarkScanner | undefined) => (chunk: Buffer) => {
      pushOutput(output, scanner ? scanner.push(chunk) : chunk);
      const status = report?.stderr.found;
      if (status != null && report?.stdout.found != null && killedFor === null)
        finish(Number(status), null, undefined, true);
    };
    child.once("exit", (code, signal) => finish(code, signal));
    child.once("error", (error) => finish(null, null, error));
    child.stdout?.on("data", watch(stdout, report?.stdout));
    child.stderr?.on("data", watch(stderr, report?.stderr));
    // A pre-warmed interpreter reaches its run a few turns of the loop after it was taken: one that
    // died meanwhile has had its 'exit' already, and no second one would ever come.
    if (!isAlive(child)) finish(child.exitCode, child.signalCode);

    if (!settled) cpuWatch = setTimeout(watchCpu, CPU_BASELINE_DELAY_MS);
  });
}

/** Stops reading stdout and stderr: the run has reported its end, and its kill is on the way. */
function closePipes(child: ChildProcess): Promise<void> {
  child.stdout?.destroy();
  child.stderr?.destroy();
  return Promise.resolve();
}

/** Waits for stdout and stderr to close, but never longer than the grace period. */
function waitForPipes(child: ChildProcess): Promise<void> {
  const streams = [child.stdout, child.stderr].filter((stream) => stream !== null && !stream.closed);
  if (streams.length === 0) return Promise.resolve();
  return new Promise((resolve) => {
    let open = streams.length;
    const done = (): void => {
      clearTimeout(grace);
      for (const stream of streams) stream?.destroy();
      resolve();
    };
    const grace = setTimeout(done, DRAIN_GRACE_MS);
    for (const stream of streams) {
      stream?.once("close", () => {
        open -= 1;
        if (open === 0) done();
      });
    }
  });
}

interface RunOutcome {
  exitCode: number | null;
  signal: string | null;
  killedFor: KillReason | null;
  truncated: boolean;
  error: ParsedError | undefined;
  stderr: string;
  /** The run's memory cgroup OOM-killed one of its processes. */
  memoryExceeded?: boolean;
}

/** Out of memory as Python, V8 or the C runtime report it. */
const MEMORY_EXHAUSTED =
  /\bMemoryError\b|JavaScript heap out of memory|Array buffer allocation failed|std::bad_alloc|Cannot allocate memory/;

/** Why the run ended, most specific reason first: our own kills, then limits, then the exit code. */
export function classifyRun(outcome: RunOutcome): RunStatus {
  // The cause, even when the survivors then hung until the deadline or died of the kill.
  if (outcome.memoryExceeded) return "memory_limit";
  if (outcome.killedFor === "cpu_budget") return "timeout";
  if (outcome.killedFor === "cancelled") return "killed";
  if (outcome.killedFor) return outcome.killedFor;
  // The kernel sends SIGXCPU when RLIMIT_CPU runs out: the program used up its time.
  if (outcome.signal === "SIGXCPU") return "timeout";
  const failed = outcome.exitCode !== 0 || outcome.signal !== null;
  if (failed && (outcome.error?.type === "MemoryError" || MEMORY_EXHAUSTED.test(outcome.stderr))) return "memory_limit";
  if (outcome.signal) return "killed";
  if (outcome.truncated) return "output_limit";
  return outcome.exitCode === 0 ? "ok" : "error";
}

/**
 * A line for stderr when a whole-run limit ended the run: a process killed by the kernel prints no
 * traceback, and the fixer, which reads the stderr tail, must learn why the program died.
 */
function runLimitNote(runLimits: RunWideLimits | undefined, status: RunStatus, killedFor: KillReason | null): string {
  if (killedFor === "cancelled") return `\n${RUN_CANCELLED_NOTE}\n`;
  if (!runLimits) return "";
  if (status === "memory_limit" && runLimits.memoryExceeded()) return wholeRunMemoryNote(runLimits.memoryMb);
  if (killedFor === "cpu_budget") {
    return `\n[selfheal] the run's processes together used more than ${runLimits.cpuSeconds} CPU seconds, the limit for the whole run, and were killed\n`;
  }
  return "";
}

/** The last line of a cancelled run's stderr, so the fixer and a person reading it learn why it ended. */
export const RUN_CANCELLED_NOTE = "[selfheal] the run was cancelled and its processes killed";

/** The stderr line for a run whose processes the kernel killed at the whole-run memory limit. */
export function wholeRunMemoryNote(memoryMb: number): string {
  return `\n[selfheal] the run's processes together used more than ${memoryMb} MiB of memory, the limit for the whole run, and the kernel killed them\n`;
}

function signalName(signalNumber: number): NodeJS.Signals | null {
  for (const [name, number] of Object.entries(osConstants.signals)) {
    if (number === signalNumber) return name as NodeJS.Signals;
  }
  return null;
}

/** The result of a run that could not start: no interpreter, no container engine. */
export function unavailableResult(message: string, startedAt: number): RunResult {
  return {
    status: "unavailable",
    exitCode: null,
    signal: null,
    stdout: "",
    stderr: `${message}\n`,
    truncated: false,
    durationMs: performance.now() - startedAt,
  };
}
