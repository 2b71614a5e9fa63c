import {
  assembleProgram,
  findExitCalls,
  judgeAttempt,
  type RunStatus,
  type Sandbox,
  settleCompletion,
  TESTS_NOT_FINISHED,
} from "../index.js";
import { type BenchmarkTask, buildHiddenTests } from "./dataset.js";
import { type EffectiveMutant, type FindMutantsOptions, findEffectiveMutants } from "./mutants.js";
import { MUTATION_OPERATORS, type MutationOperator } from "./mutators.js";
import { mapWithConcurrency } from "./pool.js";
import { buildVisibleTests } from "./visible-tests.js";

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
 */
export async function judgeCompletion(
  sandbox: Sandbox,
  task: BenchmarkTask,
  completion: string,
  timeoutMs: number,
): Promise<JudgeVerdict> {
  return judgeProgram(sandbox, `${task.prompt}${completion}`, buildHiddenTests(task), timeoutMs);
}

/** Judges a whole program (as a run hands it over) against tests appended after it. */
export async function judgeProgram(
  sandbox: Sandbox,
  program: string,
  tests: string,
  timeoutMs: number,
): Promise<JudgeVerdict> {
  const assembled = assembleProgram(program, tests, "python");
  const result = settleCompletion(
    await sandbox.run({ language: "python", code: assembled.source, timeoutMs }),
    assembled,
  );
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

/** Python prints the exception last, so the last line of stderr names the failure. */
function lastLine(text: string): string | undefined {
  const line = text.trim().split("\n").at(-1)?.trim();
  return line === "" ? undefined : line;
}

/**
 * Limits for the benchmark's sandbox. HumanEval+ and MBPP+ hidden tests can be heavy: on a busy
 * 2-core machine HumanEval+/15 and /139's reference solutions take over 30 s, Mbpp/599's 46 s,
 * and Mbpp/255's needs between 2 and 4 GB of address space. A judge that kills a correct program
 * is a false fail. The agent's own runs keep their wall-clock limit (`timeoutMs`).
 */
export const BENCH_SANDBOX_LIMITS = { cpuSeconds: 120, memoryMb: 4096 } as const;

/** Wall-clock limit for judging one program on hidden tests, by the same reasoning. */
export const HIDDEN_JUDGE_TIMEOUT_MS = 120_000;

export interface MutantVerification {
  id: string;
  operator: MutationOperator;
  description: string;
  difference: EffectiveMutant["difference"];
  /** The behaviour difference the probe saw, independent of the tests' assertions. */
  detail: string;
  verdict: JudgeVerdict;
}

export interface TaskVerification {
  taskId: string;
  canonical: JudgeVerdict;
  /** The reference solution against the visible tests (the docstring's examples); absent when the task has none. */
  visible?: JudgeVerdict;
  mutants: MutantVerification[];
  generated: number;
  tried: number;
  invalid: number;
  equivalent: number;
  /** Set when no effective mutant could be made. */
  noMutantReason?: string;
}

export interface VerifyReport {
  sandboxKind: string;
  concurrency: number;
  tasks: number;
  canonicalPassed: number;
  /** Reference solutions the judge rejected. */
  falseFails: Array<{ taskId: string; status: RunStatus; error?: string }>;
  /** Tasks with visible tests, and those whose reference solution fails them: feedback that would mislead a correct program. */
  visibleChecked: number;
  visibleFalseFails: Array<{ taskId: string; status: RunStatus; error?: string }>;
  mutantsJudged: number;
  mutantsCaught: number;
  /** Behaviour-changing mutants the judge accepted. */
  falsePasses: Array<{ taskId: string; mutantId: string; description: string; detail: string }>;
  tasksWithoutMutants: Array<{ taskId: string; reason: string }>;
  /** Tasks by number of effective mutants: index 0 = none, 1 = one, ... */
  mutantsPerTaskHistogram: number[];
  byOperator: Record<MutationOperator, { judged: number; caught: number }>;
  candidates: { generated: number; tried: number; invalid: number; equivalent: number };
  durationMs: number;
  perTask: TaskVerification[];
}

export interface VerifyOptions extends FindMutantsOptions {
  tasks: readonly BenchmarkTask[];
  sandbox: Sandbox;
  /** Tasks in flight at once. */
  concurrency?: number;
  /** Limit for a reference solution's run; a few HumanEval+ tests take several seconds. */
  canonicalTimeoutMs?: number;
  /** Limit for a mutant's judge run: short, because a hanging mutant fails either way. */
  mutantTimeoutMs?: number;
  onProgress?: (event: { done: number; total: number; task: TaskVerification }) => void;
}

/**
 * Judges the judge. Every reference solution must pass its hidden tests; every mutant that
 * provably changes behaviour on those tests must fail them. Anything else is reported by name.
 */
export async function verifyDataset({
  tasks,
  sandbox,
  concurrency = 2,
  canonicalTimeoutMs = HIDDEN_JUDGE_TIMEOUT_MS,
  mutantTimeoutMs = 3_000,
  onProgress,
  ...mutantOptions
}: VerifyOptions): Promise<VerifyReport> {
  const started = performance.now();
  let done = 0;
  const perTask = await mapWithConcurrency(tasks, concurrency, async (task) => {
    const result = await verifyTask(task, sandbox, canonicalTimeoutMs, mutantTimeoutMs, mutantOptions);
    done += 1;
    onProgress?.({ done, total: tasks.length, task: result });
    return result;
  });
  return summarize(perTask, sandbox.kind, concurrency, performance.now() - started);
}

async function verifyTask(
  task: BenchmarkTask,
  sandbox: Sandbox,
  canonicalTimeoutMs: number,
  mutantTimeoutMs: number,
  mutantOptions: FindMutantsOptions,
): Promise<TaskVerification> {
  const canonical = await judgeCompletion(sandbox, task, task.canonical_solution, canonicalTimeoutMs);
  const visibleTests = buildVisibleTests(task);
  const visible =
    visibleTests === null
      ? undefined
      : await judgeProgram(sandbox, task.prompt + task.canonical_solution, visibleTests, canonicalTimeoutMs);
  const found = await findEffectiveMutants(task, sandbox, mutantOptions);
  const mutants: MutantVerification[] = [];
  for (const mutant of found.effective) {
    mutants.push({
      id: mutant.id,
      operator: mutant.operator,
      description: mutant.description,
      difference: mutant.difference,
      detail: mutant.detail,
      verdict: await judgeCompletion(sandbox, task, mutant.solution, mutantTimeoutMs),
    });
  }
  return {
    taskId: task.task_id,
    canonical,
    ...(visible !== undefined ? { visible } : {}),
    mutants,
    generated: found.generated,
    tried: found.tried,
    invalid: found.invalid,
    equivalent: found.equivalent,
    ...(found.reason !== undefined ? { noMutantReason: found.reason } : {}),
  };
}

function summarize(
  perTask: TaskVerification[],
  sandboxKind: string,
  concurrency: number,
  durationMs: number,
): VerifyReport {
  const byOperator = Object.fromEntries(
    MUTATION_OPERATORS.map((operator) => [operator, { judged: 0, caught: 0 }]),
  ) as Record<MutationOperator, { judged: number; caught: number }>;
  const histogram: number[] = [];
  const report: VerifyReport = {
    sandboxKind,
    concurrency,
    tasks: perTask.length,
    canonicalPassed: 0,
    falseFails: [],
    visibleChecked: 0,
    visibleFalseFails: [],
    mutantsJudged: 0,
    mutantsCaught: 0,
    falsePasses: [],
    tasksWithoutMutants: [],
    mutantsPerTaskHistogram: histogram,
    byOperator,
    candidates: { generated: 0, tried: 0, invalid: 0, equivalent: 0 },
    durationMs: Math.round(durationMs),
    perTask,
  };
  for (const task of perTask) {
    if (task.canonical.passed) {
      report.canonicalPassed += 1;
    } else {
      report.falseFails.push({
        taskId: task.taskId,
        status: task.canonical.status,
        ...(task.canonical.error !== undefined ? { error: task.canonical.error } : {}),
      });
    }
    if (task.visible !== undefined) {
      report.visibleChecked += 1;
      if (!task.visible.passed) {
        report.visibleFalseFails.push({
          taskId: task.taskId,
          status: task.visible.status,
          ...(task.visible.error !== undefined ? { error: task.visible.error } : {}),
        });
      }
    }
    histogram[task.mutants.length] = (histogram[task.mutants.length] ?? 0) + 1;
    if (task.mutants.length === 0) {
      report.tasksWithoutMutants.push({ taskId: task.taskId, reason: task.noMutantReason ?? "no effective mutant" });
    }
    for (const mutant of task.mutants) {
      report.mutantsJudged += 1;
      byOperator[mutant.operator].judged += 1;
      if (mutant.verdict.passed) {
        report.falsePasses.push({
          taskId: task.taskId,
          mutantId: mutant.id,
          description: mutant.description,
          detail: mutant.detail,
        });
      } else {
        report.mutantsCaught += 1;
        byOperator[mutant.operator].caught += 1;
      }
    }
    report.candidates.generated += task.generated;
    report.candidates.tried += task.tried;
    report.candidates.invalid += task.invalid;
    report.candidates.equivalent += task.equivalent;
  }
  for (let index = 0; index < histogram.length; index += 1) histogram[index] ??= 0;
  return report;
}

/** Plain-text summary for the terminal. */
export function formatVerifyReport(report: VerifyReport): string {
  const lines = [
    `Dataset verify: ${report.tasks} tasks, sandbox ${report.sandboxKind}, concurrency ${report.concurrency}, ${(report.durationMs / 1000).toFixed(1)} s`,
    `  reference solutions passing   ${report.canonicalPassed}/${report.tasks}`,
    `  false fails                   ${report.falseFails.length}`,
    `  visible-test false fails      ${report.visibleFalseFails.length} (of ${report.visibleChecked} tasks with examples)`,
    `  mutants judged                ${report.mutantsJudged} (caught ${report.mutantsCaught})`,
    `  false passes                  ${report.falsePasses.length}`,
    `  tasks with 0/1/2/3.. mutants  ${report.mutantsPerTaskHistogram.join("/")}`,
    `  candidates generated ${report.candidates.generated}, tried ${report.candidates.tried}, ` +
      `invalid ${report.candidates.invalid}, equivalent on the tests ${report.candidates.equivalent}`,
    "  by operator (caught/judged): " +
      MUTATION_OPERATORS.filter((operator) => report.byOperator[operator].judged > 0)
        .map((operator) => `${operator} ${report.byOperator[operator].caught}/${report.byOperator[operator].judged}`)
        .join(", "),
  ];
  for (const fail of report.falseFails)
    lines.push(`  FALSE FAIL ${fail.taskId}: ${fail.status}${fail.error ? ` (${fail.error})` : ""}`);
  for (const fail of report.visibleFalseFails) {
    lines.push(`  VISIBLE FALSE FAIL ${fail.taskId}: ${fail.status}${fail.error ? ` (${fail.error})` : ""}`);
  }
  for (const pass of report.falsePasses) {
    lines.push(`  FALSE PASS ${pass.taskId} ${pass.mutantId}: ${pass.description}; ${pass.detail}`);
  }
  for (const task of report.tasksWithoutMutants) lines.push(`  no mutant: ${task.taskId}: ${task.reason}`);
  return lines.join("\n");
}
