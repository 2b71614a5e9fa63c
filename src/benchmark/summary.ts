import type { Strategy } from "../internal.js";
import {
  passAtK,
  type StrategyStep,
  solvedAfterSteps,
  solvedAtEqualTokens,
  solvedPerThousandTokens,
  solvedWithinTokens,
  stepTokens,
  tokenGrid,
} from "./metrics.js";
import {
  type BenchmarkReport,
  compareTaskIds,
  type SamplingSummary,
  type StrategySummary,
  type TaskOutcome,
  type TaskStatus,
} from "./records.js";
import { FEEDBACK_LABELS, type FeedbackMode } from "./task-input.js";

// The report from the tasks' records: counts, means, pass@k, and the curves of repair against
// resampling and of each strategy, by programs written and by tokens.

const round = (value: number, digits = 2): number => Number(value.toFixed(digits));

function sortedRecord(record: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(record).sort(([a, x], [b, y]) => y - x || a.localeCompare(b)));
}

const repairSteps = (outcome: Pick<TaskOutcome, "attemptRecords">): StrategyStep[] =>
  outcome.attemptRecords.map((record) => ({ tokens: record.tokens, handoverPassed: record.handoverPassed }));
const sampleSteps = (outcome: TaskOutcome): StrategyStep[] =>
  (outcome.samples ?? []).map((sample) => ({ tokens: sample.tokens, handoverPassed: sample.handoverPassed }));

function summarizeSampling(perTask: readonly TaskOutcome[], samples: number): SamplingSummary | undefined {
  if (samples === 0) return undefined;
  const sampled = perTask.map(sampleSteps);
  const count = perTask.length;
  const passAtKs = Array.from({ length: samples }, (_, index) => {
    const k = index + 1;
    const total = perTask.reduce((sum, outcome) => {
      const drawn = outcome.samples ?? [];
      if (drawn.length < k) return sum;
      return sum + passAtK(drawn.length, drawn.filter((sample) => sample.hidden.passed).length, k);
    }, 0);
    return count === 0 ? 0 : round(total / count, 4);
  });
  const tokens = sampled.reduce((sum, steps) => sum + stepTokens(steps), 0);
  const solved = solvedAfterSteps(sampled, samples);
  return {
    samples,
    passAtK: passAtKs,
    solvedWithin: Array.from({ length: samples }, (_, index) => solvedAfterSteps(sampled, index + 1)),
    tokens,
    tokensPerTask: count === 0 ? 0 : round(tokens / count, 1),
    solvedPerThousandTokens: solvedPerThousandTokens(solved, tokens),
    atRepairTokens: {
      resampling: solvedAtEqualTokens(perTask.map(repairSteps), sampled),
      repair: perTask.filter((outcome) => outcome.solved).length,
    },
  };
}

export function summarizeBenchmark(
  outcomes: readonly TaskOutcome[],
  meta: {
    model: BenchmarkReport["model"];
    dataset: string;
    feedback: FeedbackMode;
    settings: BenchmarkReport["settings"];
    /** Strategies compared; the first is the main run's. */
    strategies?: readonly Strategy[];
    wallMsTotal: number;
  },
): BenchmarkReport {
  const perTask = [...outcomes].sort((a, b) => compareTaskIds(a.taskId, b.taskId));
  const count = perTask.length;
  const solved = perTask.filter((outcome) => outcome.solved);
  const input = perTask.reduce((sum, outcome) => sum + outcome.inputTokens, 0);
  const output = perTask.reduce((sum, outcome) => sum + outcome.outputTokens, 0);
  const statusCounts: Record<TaskStatus, number> = {
    running: 0,
    passed: 0,
    failed: 0,
    stuck: 0,
    budget_exhausted: 0,
    model_error: 0,
    invalid_input: 0,
    error: 0,
  };
  const failuresByErrorClass: Record<string, number> = {};
  const tokensByErrorClass: Record<string, number> = {};
  for (const outcome of perTask) {
    statusCounts[outcome.status] += 1;
    if (outcome.finalErrorClass !== undefined) {
      failuresByErrorClass[outcome.finalErrorClass] = (failuresByErrorClass[outcome.finalErrorClass] ?? 0) + 1;
    }
    for (const [errorClass, tokens] of Object.entries(outcome.tokensByErrorClass)) {
      tokensByErrorClass[errorClass] = (tokensByErrorClass[errorClass] ?? 0) + tokens;
    }
  }
  const perTaskMean = (total: number) => (count === 0 ? 0 : round(total / count, 1));
  const perSolved = (total: number) => (solved.length === 0 ? null : round(total / solved.length, 1));
  const { maxAttempts, samples } = meta.settings;
  const sampling = summarizeSampling(perTask, samples);
  const repair = perTask.map(repairSteps);
  const sampled = perTask.map(sampleSteps);
  const programs = Array.from({ length: Math.max(maxAttempts, samples) }, (_, index) => index + 1);
  const byStrategy = strategySteps(perTask, meta.strategies ?? []);
  const maxTokens = Math.max(
    0,
    ...repair.map(stepTokens),
    ...sampled.map(stepTokens),
    ...Object.values(byStrategy).flatMap((tasks) => tasks.map(stepTokens)),
  );
  const budgets = tokenGrid(maxTokens);
  const firstSolved = perTask.filter((outcome) => outcome.solvedFirstAttempt).length;
  const feedbackPassed = perTask.filter((outcome) => outcome.feedbackPassed);
  return {
    model: meta.model,
    dataset: meta.dataset,
    feedback: {
      mode: meta.feedback,
      label: FEEDBACK_LABELS[meta.feedback],
      tasksWithVisibleTests: perTask.filter((outcome) => outcome.hasVisibleTests).length,
    },
    settings: meta.settings,
    tasks: count,
    solvedFirstAttempt: firstSolved,
    solvedFinal: solved.length,
    solvedWithin: Array.from(
      { length: maxAttempts },
      (_, index) => perTask.filter((outcome) => outcome.solvedWithin[index]).length,
    ),
    feedbackPassed: feedbackPassed.length,
    feedbackPassedHiddenFailed: feedbackPassed.filter((outcome) => !outcome.solved).length,
    passAt1: count === 0 ? 0 : round(firstSolved / count, 4),
    passFinal: count === 0 ? 0 : round(solved.length / count, 4),
    meanAttemptsSolved:
      solved.length === 0 ? null : round(solved.reduce((sum, outcome) => sum + outcome.attempts, 0) / solved.length),
    tokens: {
      input,
      output,
      inputPerTask: perTaskMean(input),
      outputPerTask: perTaskMean(output),
      inputPerSolved: perSolved(input),
      outputPerSolved: perSolved(output),
      solvedPerThousandTokens: solvedPerThousandTokens(solved.length, input + output),
    },
    wallMs: {
      total: Math.round(meta.wallMsTotal),
      meanPerTask: count === 0 ? 0 : Math.round(perTask.reduce((sum, outcome) => sum + outcome.wallMs, 0) / count),
    },
    statusCounts,
    failuresByErrorClass: sortedRecord(failuresByErrorClass),
    tokensByErrorClass: sortedRecord(tokensByErrorClass),
    ...(sampling ? { sampling } : {}),
    curves: {
      byAttempt: {
        programs,
        repair: programs.map((steps) => solvedAfterSteps(repair, steps)),
        resampling: sampling
          ? programs
              .map((steps) => (steps <= samples ? solvedAfterSteps(sampled, steps) : null))
              .filter((value): value is number => value !== null)
          : null,
      },
      byTokens: {
        budgets,
        repair: budgets.map((budget) => solvedWithinTokens(repair, budget)),
        resampling: sampling ? budgets.map((budget) => solvedWithinTokens(sampled, budget)) : null,
        ...(meta.strategies && meta.strategies.length > 1
          ? {
              strategies: Object.fromEntries(
                Object.entries(byStrategy).map(([strategy, tasks]) => [
                  strategy,
                  budgets.map((budget) => solvedWithinTokens(tasks, budget)),
                ]),
              ),
            }
          : {}),
      },
    },
    ...(meta.strategies && meta.strategies.length > 1
      ? { strategies: summarizeStrategies(perTask, meta.strategies, meta.settings.candidates ?? 1) }
      : {}),
    perTask,
  };
}

/** Each compared strategy's steps per task: the main run's for the first, the extra runs' for the others. */
function strategySteps(
  perTask: readonly TaskOutcome[],
  strategies: readonly Strategy[],
): Partial<Record<Strategy, StrategyStep[][]>> {
  if (strategies.length < 2) return {};
  return Object.fromEntries(
    strategies.map((strategy, index) => [
      strategy,
      perTask.map((outcome) =>
        repairSteps(index === 0 ? outcome : { attemptRecords: [], ...outcome.strategyRuns?.[strategy] }),
      ),
    ]),
  );
}

function summarizeStrategies(
  perTask: readonly TaskOutcome[],
  strategies: readonly Strategy[],
  candidates: number,
): StrategySummary {
  const perStrategy: StrategySummary["perStrategy"] = {};
  strategies.forEach((strategy, index) => {
    const runs = perTask.map((outcome) => (index === 0 ? outcome : outcome.strategyRuns?.[strategy]));
    const solved = runs.filter((run) => run?.solved).length;
    const tokens = runs.reduce((sum, run) => sum + (run ? run.inputTokens + run.outputTokens : 0), 0);
    perStrategy[strategy] = {
      solved,
      tokensPerTask: perTask.length === 0 ? 0 : round(tokens / perTask.length, 1),
      solvedPerThousandTokens: solvedPerThousandTokens(solved, tokens),
    };
  });
  return { candidates, strategies: [...strategies], perStrategy };
}
