import {
  type AssembledProgram,
  findExitCalls,
  judgeAttempt,
  type PreparedProgram,
  parseError,
  prepareProgram,
  type RunResult,
  type RunStatus,
  type Sandbox,
  settleCompletion,
  type TaskHelpers,
  TESTS_NOT_FINISHED,
  type TestIsolation,
} from "../internal.js";
import { type BatchedRun, type BatchOptions, runBatches } from "./batch.js";
import { type BenchmarkTask, buildHiddenTests, taskHelpers } from "./dataset.js";
import { mapWithConcurrency } from "./pool.js";

/** What the judge said about one program: the hidden tests pass only on a clean `ok` with the tests run to their end. */
export interface JudgeVerdict {
  passed: boolean;
  status: RunStatus;
  durationMs: number;
  /** `Type: message` of the failure, when the sandbox parsed one. */
  error?: string;
  /** The failure's class for counting: the exception type, or the run status (`timeout`) when none was raised. */
  errorClass?: string;
}

/**
 * The benchmark's judge, HumanEval's rule: prompt + completion, then the tests and the check call,
 * run without error, to their end. A timeout or a resource kill is a fail, never a pass, and so is
 * any `SystemExit` (HumanEval's harness counts one as a failure): `sys.exit(0)` before the tests,
 * or `os._exit(0)`, leaves no completion mark. The verdict is the agent's own (`judgeAttempt`).
 * Unlike HumanEval's harness, the hidden tests always run in a process of their own, which the
 * program cannot read or change, and compare what it returns as plain data: a completion cannot
 * forge a pass (a lying `__eq__`, a patched assert, the expected values read off the stack).
 */
export async function judgeCompletion(
  sandbox: Sandbox,
  task: BenchmarkTask,
  completion: string,
  timeoutMs: number,
): Promise<JudgeVerdict> {
  return judgeProgram(sandbox, `${task.prompt}${completion}`, buildHiddenTests(task), timeoutMs, taskHelpers(task));
}

/**
 * Judges a whole program (as a run hands it over) against tests run in a process of their own, with
 * the task's own definitions (`helpers`) where the tests use them.
 *
 * `isolation` is for measurement only (bench/judge.ts, bench/sandbox.ts): `shared` judges the old
 * way, the tests appended to the program in its process, where a completion can forge a pass. The
 * benchmark's verdicts always come from `process`, the default.
 */
export async function judgeProgram(
  sandbox: Sandbox,
  program: string,
  tests: string,
  timeoutMs: number,
  helpers?: TaskHelpers,
  isolation: TestIsolation = "process",
): Promise<JudgeVerdict> {
  const prepared = judged(program, tests, helpers, isolation);
  return verdictOn(program, prepared.assembled, await sandbox.run({ ...runRequest(prepared), timeoutMs }));
}

function judged(
  program: string,
  tests: string,
  helpers: TaskHelpers | undefined,
  isolation: TestIsolation,
): PreparedProgram {
  // Shared, the helpers need no passing: the tests run after the program, whose prompt defines them.
  return prepareProgram(program, tests, "python", { isolation, ...(helpers ? { helpers } : {}) });
}

function runRequest(prepared: PreparedProgram) {
  return {
    language: "python" as const,
    code: prepared.code,
    ...(prepared.files ? { files: prepared.files } : {}),
    ...(prepared.stdin !== undefined ? { stdin: prepared.stdin } : {}),
  };
}

/** The verdict on one run of an assembled program: the agent's own rule, wherever the run happened. */
function verdictOn(program: string, assembled: AssembledProgram, run: RunResult): JudgeVerdict {
  const result = settleCompletion(run, assembled);
  const { critique, failure } = judgeAttempt({
    run: { ...result, failedInTests: false, exitCalls: findExitCalls(program, "python") },
    hasTests: true,
  });
  const passed = critique.passed;
  const error = result.error
    ? `${result.error.type}: ${result.error.message}`
    : passed
      ? undefined
      : failure?.type === TESTS_NOT_FINISHED
        ? `${failure.type}: ${failure.message}`
        : lastLine(result.stderr);
  const errorClass = passed
    ? undefined
    : failure?.type === TESTS_NOT_FINISHED
      ? failure.type
      : (result.error?.type ?? result.status);
  return {
    passed,
    status: result.status,
    durationMs: result.durationMs,
    ...(error ? { error } : {}),
    ...(errorClass ? { errorClass } : {}),
  };
}

/** One program to judge against its tests, within its own wall-clock limit. */
export interface JudgeItem {
  program: string;
  tests: string;
  timeoutMs: number;
  /** The task's own definitions the tests use (see `taskHelpers`). */
  helpers?: TaskHelpers;
}

export interface JudgeBatchOptions extends BatchOptions {
  sandbox: Sandbox;
  /** Batch runs in flight at once. */
  lanes: number;
  /** For measurement only, as `judgeProgram`'s: `shared` judges the old way; the default is `process`. */
  isolation?: TestIsolation;
}

/**
 * Judges many programs in batch runs (batch.ts: one process each, and the rule that keeps them
 * apart), by the same verdict rule as `judgeProgram`. A batched verdict is final only where it is
 * the kind `final` names and the run ended plainly (an exit, no signal, no limit near); every other
 * program is judged again alone, by `judgeProgram`. Mutants keep their batched fails (a pass would
 * be a false pass, which the real judge must confirm), references their batched passes (a false
 * fail is confirmed the same way).
 */
export async function judgeBatched(
  items: readonly JudgeItem[],
  final: "passes" | "fails",
  options: JudgeBatchOptions,
): Promise<JudgeVerdict[]> {
  const isolation = options.isolation ?? "process";
  const batched = (await batchedVerdicts(items, options)).map((verdict) =>
    verdict !== null && verdict.passed === (final === "passes") ? verdict : null,
  );
  return mapWithConcurrency(
    items,
    options.lanes,
    async (item, index) =>
      batched[index] ??
      judgeProgram(options.sandbox, item.program, item.tests, item.timeoutMs, item.helpers, isolation),
  );
}

/**
 * What batch runs alone say of each program, by the verdict rule of \`judgeProgram\`: null where the
 * batch gave no answer or the run did not end plainly (see \`judgeBatched\`, which judges those alone).
 */
export async function batchedVerdicts(
  items: readonly JudgeItem[],
  options: JudgeBatchOptions,
): Promise<Array<JudgeVerdict | null>> {
  const isolation = options.isolation ?? "process";
  const prepared = items.map((item) => judged(item.program, item.tests, item.helpers, isolation));
  const runs = await runBatches(
    options.sandbox,
    prepared.map((program, index) => {
      const { code, files, stdin } = runRequest(program);
      return { code, timeoutMs: items[index]!.timeoutMs, ...(files ? { files } : {}), ...(stdin ? { stdin } : {}) };
    }),
    options,
  );
  return items.map((item, index) => {
    const run = runs[index];
    const result = run ? asRunResult(run, item.timeoutMs) : null;
    return result ? verdictOn(item.program, prepared[index]!.assembled, result) : null;
  });
}

/**
 * A batched run as the sandbox reports one that ended the same way (`ok` or `error`); null when it
 * hit a limit, ended by a signal, or passed in over half its time (a run alone also starts its
 * interpreter on that clock).
 */
function asRunResult(run: BatchedRun, timeoutMs: number): RunResult | null {
  if (run.exitCode === null || run.timedOut || run.truncated) return null;
  if (run.exitCode === 0 && run.durationMs > timeoutMs / 2) return null;
  // Out of memory is the sandbox's memory_limit status, told from more than the exit: leave it to a run alone.
  if (run.exitCode !== 0 && /memory/i.test(run.stderr)) return null;
  const error = run.exitCode === 0 ? null : parseError("python", run.stderr);
  return {
    status: run.exitCode === 0 ? "ok" : "error",
    exitCode: run.exitCode,
    signal: null,
    stdout: run.stdout,
    stderr: run.stderr,
    truncated: false,
    durationMs: run.durationMs,
    ...(error ? { error } : {}),
  };
}

/** Python prints the exception last, so the last line of stderr names the failure. */
function lastLine(text: string): string | undefined {
  const line = text.trim().split("\n").at(-1)?.trim();
  return line === "" ? undefined : line;
}
