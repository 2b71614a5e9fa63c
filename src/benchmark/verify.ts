import type { RunStatus, Sandbox } from "../index.js";
import { type BenchmarkTask, buildCheckProgram } from "./dataset.js";
import {
  type EffectiveMutant,
  type FindMutantsOptions,
  findEffectiveMutants,
  MUTATION_OPERATORS,
  type MutationOperator,
} from "./mutants.js";
import { mapWithConcurrency } from "./pool.js";

/** What the judge said about one program: the hidden tests pass only on a clean `ok`. */
export interface JudgeVerdict {
  passed: boolean;
  status: RunStatus;
  durationMs: number;
  /** `Type: message` of the failure, when the sandbox parsed one. */
  error?: string;
}

/**
 * The benchmark's judge, exactly HumanEval's rule: prompt + completion + tests + check call run
 * without error. A timeout or a resource kill is a fail, never a pass.
 */
export async function judgeCompletion(
  sandbox: Sandbox,
  task: BenchmarkTask,
  completion: string,
  timeoutMs: number,
): Promise<JudgeVerdict> {
  const result = await sandbox.run({ language: "python", code: buildCheckProgram(task, completion), timeoutMs });
  const passed = result.status === "ok";
  const error = result.error
    ? `${result.error.type}: ${result.error.message}`
    : passed
      ? undefined
      : lastLine(result.stderr);
  return { passed, status: result.status, durationMs: result.durationMs, ...(error ? { error } : {}) };
}

/** Python prints the exception last, so the last line of stderr names the failure. */
function lastLine(text: string): string | undefined {
  const line = text.trim().split("\n").at(-1)?.trim();
  return line === "" ? undefined : line;
}

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
  /** Limit for a reference solution's run; a few HumanEval tests take a second or two. */
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
  canonicalTimeoutMs = 20_000,
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
  for (const pass of report.falsePasses) {
    lines.push(`  FALSE PASS ${pass.taskId} ${pass.mutantId}: ${pass.description}; ${pass.detail}`);
  }
  for (const task of report.tasksWithoutMutants) lines.push(`  no mutant: ${task.taskId}: ${task.reason}`);
  return lines.join("\n");
}
