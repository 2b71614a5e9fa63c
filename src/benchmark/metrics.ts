/**
 * The unbiased pass@k estimator of Chen et al. (2021), "Evaluating Large Language Models Trained
 * on Code": with `n` samples of which `c` are correct, the chance that at least one of `k` drawn
 * without replacement is correct, 1 - C(n-c, k) / C(n, k). Computed as a running product, as in
 * the paper's code, because the binomials overflow long before realistic n.
 */
export function passAtK(n: number, c: number, k: number): number {
  if (
    !Number.isInteger(n) ||
    !Number.isInteger(c) ||
    !Number.isInteger(k) ||
    n < 1 ||
    c < 0 ||
    c > n ||
    k < 1 ||
    k > n
  ) {
    throw new RangeError(`passAtK needs whole numbers with 0 <= c <= n and 1 <= k <= n, got n=${n}, c=${c}, k=${k}`);
  }
  if (n - c < k) return 1;
  let allWrong = 1;
  for (let i = n - c + 1; i <= n; i += 1) allWrong *= 1 - k / i;
  return 1 - allWrong;
}

/** One program a strategy produced for a task, in the order it produced them. */
export interface StrategyStep {
  /** Tokens spent to write (and review) this program. */
  tokens: number;
  /** Whether the program the strategy would hand over, had it stopped after this step, passes the hidden tests. */
  handoverPassed: boolean;
}

/** Tasks solved had each task stopped after `steps` programs (a task that stopped earlier keeps its last handover). */
export function solvedAfterSteps(tasks: ReadonlyArray<readonly StrategyStep[]>, steps: number): number {
  return tasks.filter((task) => {
    const last = task[Math.min(steps, task.length) - 1];
    return last?.handoverPassed ?? false;
  }).length;
}

/**
 * Tasks solved had each task been allowed `budget` tokens: the last step whose running total fits
 * the budget is handed over; a task whose first program costs more solves nothing.
 */
export function solvedWithinTokens(tasks: ReadonlyArray<readonly StrategyStep[]>, budget: number): number {
  return tasks.filter((task) => {
    let spent = 0;
    let handover = false;
    for (const step of task) {
      spent += step.tokens;
      if (spent > budget) break;
      handover = step.handoverPassed;
    }
    return handover;
  }).length;
}

/** Tokens a task's steps cost in all. */
export const stepTokens = (task: readonly StrategyStep[]): number => task.reduce((sum, step) => sum + step.tokens, 0);

/**
 * Resampling at the token cost repair paid: for each task, the samples whose running total fits
 * that task's repair tokens (at least the first, so a strategy always gets one try).
 */
export function solvedAtEqualTokens(
  repair: ReadonlyArray<readonly StrategyStep[]>,
  resampling: ReadonlyArray<readonly StrategyStep[]>,
): number {
  return resampling.filter((samples, index) => {
    const budget = stepTokens(repair[index] ?? []);
    let spent = 0;
    let handover = samples[0]?.handoverPassed ?? false;
    samples.forEach((sample, sampleIndex) => {
      spent += sample.tokens;
      if (sampleIndex > 0 && spent <= budget) handover = sample.handoverPassed;
    });
    return handover;
  }).length;
}

/** An even grid of token budgets from 0 to `max`, for the solved-vs-tokens curve. */
export function tokenGrid(max: number, points = 24): number[] {
  if (max <= 0) return [0];
  const step = Math.max(1, Math.ceil(max / (points - 1)));
  const grid: number[] = [];
  for (let budget = 0; budget < max; budget += step) grid.push(budget);
  grid.push(max);
  return grid;
}

/** Solved per 1000 tokens spent; null when nothing was spent. */
export const solvedPerThousandTokens = (solved: number, tokens: number): number | null =>
  tokens === 0 ? null : Number(((solved * 1000) / tokens).toFixed(3));
