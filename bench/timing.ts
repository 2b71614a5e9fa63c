import { performance } from "node:perf_hooks";

/** One thing a benchmark times: a run, with optional untimed work before each. */
export interface Contender {
  name: string;
  runOnce: () => Promise<void>;
  /** Untimed work between two timed runs (letting the next interpreter warm up). */
  between?: () => Promise<void>;
  close?: () => Promise<void>;
}

export function percentile(sorted: number[], fraction: number): number {
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

/** Untimed pause after each timed run, for the teardown the run left going to end. */
const SETTLE_MS = 100;

/**
 * Latency of every contender, measured round-robin (one run of each per round) so a change in the
 * machine's load during the benchmark hits all of them alike instead of whichever ran then.
 */
export async function latencies(contenders: Contender[], runs: number): Promise<number[][]> {
  const durations = contenders.map((): number[] => []);
  for (let run = 0; run < runs; run++) {
    for (const [index, contender] of contenders.entries()) {
      await contender.between?.();
      const started = performance.now();
      await contender.runOnce();
      durations[index]?.push(performance.now() - started);
      // What the run set going ends before the next contender's clock starts, or it would be charged
      // to whichever contender came next: a pool refilling its interpreter, and the run's teardown
      // (its processes' exits, its cgroup and work dir removed, a container's removal), which has
      // no handle to wait on, so a pause stands in for it.
      await contender.between?.();
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    }
  }
  return durations.map((list) => list.sort((a, b) => a - b));
}
