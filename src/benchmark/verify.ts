import { DEFAULT_LIMITS, type RunStatus, type Sandbox, type TestIsolation } from "../internal.js";
import { runBatches } from "./batch.js";
import { parseProbeOutput } from "./behaviour-probe.js";
import { type BenchmarkTask, buildHiddenTests, taskHelpers } from "./dataset.js";
import { type JudgeBatchOptions, type JudgeVerdict, judgeBatched } from "./judge.js";
import { type EffectiveMutant, type FindMutantsOptions, findEffectiveMutants, planProbe } from "./mutants.js";
import { MUTATION_OPERATORS, type MutationOperator } from "./mutators.js";
import { mapWithConcurrency } from "./pool.js";
import { buildVisibleTests } from "./visible-tests.js";

export { type JudgeVerdict, judgeCompletion, judgeProgram } from "./judge.js";

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
  /** Not run to the last call: the candidates before them already held the mutants kept. */
  unneeded: number;
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
  candidates: { generated: number; tried: number; invalid: number; equivalent: number; unneeded: number };
  durationMs: number;
  perTask: TaskVerification[];
}

export interface VerifyOptions extends FindMutantsOptions {
  tasks: readonly BenchmarkTask[];
  sandbox: Sandbox;
  /** Sandbox runs in flight at once (reference runs, and as many batch runs beside them). */
  concurrency?: number;
  /** Limit for a reference solution's run; a few HumanEval+ tests take several seconds. */
  canonicalTimeoutMs?: number;
  /** Limit for a mutant's judge run: short, because a hanging mutant fails either way. */
  mutantTimeoutMs?: number;
  /** The sandbox's per-stream output cap, which a batched program must hit where a run alone would. */
  maxOutputBytes?: number;
  /** Judge and probe in batch runs (batch.ts); false runs every program alone, as before batching. */
  batching?: boolean;
  /**
   * For measurement only (bench/judge.ts): `shared` runs the tests in the program's process, the
   * old way, to time today's judge against it. The report's verdicts rest on `process`, the default.
   */
  isolation?: TestIsolation;
  onProgress?: (event: { done: number; total: number; task: TaskVerification }) => void;
}

/**
 * Judges the judge. Every reference solution must pass its hidden tests; every mutant that
 * provably changes behaviour on those tests must fail them. Anything else is reported by name.
 *
 * Where the time goes: a sandbox run costs far more than most programs here. So each reference
 * runs alone, by the benchmark's own judge (the "references pass" figure is that judge's word),
 * while the visible-example checks, the behaviour probes and the mutants' judge runs go through
 * batch runs (batch.ts), one forked process per program; a batched verdict the report would rest
 * a finding on (a reference failing its examples, a mutant passing) is confirmed alone.
 */
export async function verifyDataset({
  tasks,
  sandbox,
  concurrency = 2,
  canonicalTimeoutMs = HIDDEN_JUDGE_TIMEOUT_MS,
  mutantTimeoutMs = 3_000,
  maxOutputBytes = DEFAULT_LIMITS.maxOutputBytes,
  batching = true,
  isolation = "process",
  onProgress,
  ...mutantOptions
}: VerifyOptions): Promise<VerifyReport> {
  const started = performance.now();
  const limits = { canonicalTimeoutMs, mutantTimeoutMs, mutantOptions };
  const batch = { sandbox, lanes: 1, maxOutputBytes, batching, isolation };
  // Groups of tasks, each its own pipeline (references and probes, then mutants), `concurrency`
  // groups in flight: no lane waits for a slow batch of another group.
  const groups: BenchmarkTask[][] = [];
  for (let start = 0; start < tasks.length; start += TASKS_PER_GROUP) {
    groups.push(tasks.slice(start, start + TASKS_PER_GROUP));
  }
  let done = 0;
  const perGroup = await mapWithConcurrency(groups, concurrency, async (group) => {
    const verified = await verifyGroup(group, batch, limits);
    for (const task of verified) {
      done += 1;
      onProgress?.({ done, total: tasks.length, task });
    }
    return verified;
  });
  return summarize(perGroup.flat(), sandbox.kind, concurrency, performance.now() - started);
}

/** Tasks judged together: about `MAX_BATCH` (batch.ts) mutants, at three a task. */
const TASKS_PER_GROUP = 16;

async function verifyGroup(
  tasks: readonly BenchmarkTask[],
  batch: JudgeBatchOptions,
  {
    canonicalTimeoutMs,
    mutantTimeoutMs,
    mutantOptions,
  }: { canonicalTimeoutMs: number; mutantTimeoutMs: number; mutantOptions: FindMutantsOptions },
): Promise<TaskVerification[]> {
  const { sandbox } = batch;
  const reference = (task: BenchmarkTask) => task.prompt + task.canonical_solution;
  const canonicalItems = tasks.map((task) => ({
    program: reference(task),
    tests: buildHiddenTests(task),
    helpers: taskHelpers(task),
    timeoutMs: canonicalTimeoutMs,
  }));
  const visibleItems = tasks.flatMap((task, index) => {
    const tests = buildVisibleTests(task);
    // The task's helpers name its entry point, which the tests take from the program even where it
    // has a builtin's name (Mbpp/126's sum).
    return tests === null
      ? []
      : [{ index, program: reference(task), tests, helpers: taskHelpers(task), timeoutMs: canonicalTimeoutMs }];
  });
  const probes = tasks.flatMap((task, index) => {
    const probe = planProbe(task, mutantOptions);
    return probe === null ? [] : [{ index, ...probe }];
  });
  const [referenceVerdicts, probeRuns] = await Promise.all([
    judgeBatched([...canonicalItems, ...visibleItems], "passes", batch),
    runBatches(sandbox, probes, batch),
  ]);
  const probed = new Map(
    probes.map(({ index }, at) => {
      const run = probeRuns[at];
      const plain = run && run.exitCode === 0 && !run.timedOut && !run.truncated;
      return [index, plain ? (parseProbeOutput(run.stdout) ?? undefined) : undefined];
    }),
  );
  // A probe the batch could not settle runs again alone, with findEffectiveMutants' own fallbacks.
  const found = await mapWithConcurrency(tasks, 1, (task, index) =>
    findEffectiveMutants(task, sandbox, mutantOptions, probed.get(index)),
  );

  const mutantItems = tasks.flatMap((task, index) =>
    found[index]!.effective.map((mutant) => ({
      index,
      program: `${task.prompt}${mutant.solution}`,
      tests: buildHiddenTests(task),
      helpers: taskHelpers(task),
      timeoutMs: mutantTimeoutMs,
    })),
  );
  const mutantVerdicts = await judgeBatched(mutantItems, "fails", batch);

  return tasks.map((task, index): TaskVerification => {
    const { effective, generated, tried, invalid, equivalent, unneeded, reason } = found[index]!;
    const firstMutant = mutantItems.findIndex((item) => item.index === index);
    const visibleAt = visibleItems.findIndex((item) => item.index === index);
    return {
      taskId: task.task_id,
      canonical: referenceVerdicts[index]!,
      ...(visibleAt !== -1 ? { visible: referenceVerdicts[tasks.length + visibleAt]! } : {}),
      mutants: effective.map((mutant, at) => ({
        id: mutant.id,
        operator: mutant.operator,
        description: mutant.description,
        difference: mutant.difference,
        detail: mutant.detail,
        verdict: mutantVerdicts[firstMutant + at]!,
      })),
      generated,
      tried,
      invalid,
      equivalent,
      unneeded,
      ...(reason !== undefined ? { noMutantReason: reason } : {}),
    };
  });
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
    candidates: { generated: 0, tried: 0, invalid: 0, equivalent: 0, unneeded: 0 },
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
    report.candidates.unneeded += task.unneeded;
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
      `invalid ${report.candidates.invalid}, equivalent on the tests ${report.candidates.equivalent}, ` +
      `not run to the end ${report.candidates.unneeded} (the mutants kept were already known)`,
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
