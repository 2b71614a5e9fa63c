import {
  type Agent,
  type AgentModels,
  createAgent,
  type ModelCallsMode,
  parseSettings,
  type Sandbox,
  type Settings,
  type SettingsInput,
  type Strategy,
} from "../internal.js";
import { type RunStep, type RunTrace, type TraceMeta, traceRun } from "../report/index.js";
import { type CapturedAttempt, runCapturing, streamingRunner, type TaskRunner } from "./capture.js";
import type { BenchmarkTask } from "./dataset.js";
import { createJudge, type Judge } from "./judge-cache.js";
import { mapWithConcurrency } from "./pool.js";
import {
  type AttemptRecord,
  type BenchmarkReport,
  outcomeFromRun,
  type SampleRecord,
  type TaskOutcome,
} from "./records.js";
import { summarizeBenchmark } from "./summary.js";
import type { FeedbackMode } from "./task-input.js";
import { HIDDEN_JUDGE_TIMEOUT_MS } from "./verify.js";

// The benchmark's orchestration: each task's run, its samples and its other strategies, judged
// after each run ends. What a run is given is task-input.ts, how it is read capture.ts, the
// judge judge-cache.ts, the records records.ts, the sums summary.ts, the terminal table table.ts.

export interface RunBenchmarkOptions {
  tasks: readonly BenchmarkTask[];
  /** Chat models to inject (the simulated model, or real ones built by the caller). */
  models?: AgentModels;
  /** Records the agent's model calls to a folder, or replays them from one (see AgentOptions.modelCalls). */
  modelCalls?: ModelCallsMode;
  /** A ready agent; when given, `models` and `modelCalls` are ignored. */
  agent?: Agent;
  /** Runs each task somewhere else (the queue's workers); when given, `agent` and `models` are ignored. */
  runner?: TaskRunner;
  sandbox: Sandbox;
  /** What failed attempts learn from; `visible` unless asked. */
  feedback?: FeedbackMode;
  /** Independent one-attempt samples per task, for pass@k and the resampling comparison; 0 = none. */
  samples?: number;
  /**
   * Strategies to compare at equal tokens: each task runs once under each (the first is the main
   * run), with the same `candidates` and budget, and the solved-vs-tokens chart draws one curve each.
   */
  strategies?: readonly Strategy[];
  /** Tasks in flight at once. */
  concurrency?: number;
  maxAttempts?: number;
  tokenBudget?: number;
  /** Any other run setting (model name, timeout, temperature); the defaults are the agent's own. */
  settings?: SettingsInput;
  /** Limit for one hidden-test judgement (default HIDDEN_JUDGE_TIMEOUT_MS): HumanEval+ tests can take many seconds. */
  judgeTimeoutMs?: number;
  /** Names the answers' source in the report. */
  modelLabel: { name: string; simulated: boolean; label?: string };
  /** Where the tasks came from, for the report. */
  dataset?: string;
  onProgress?: (event: { done: number; total: number; outcome: TaskOutcome }) => void;
  /** Called with each task's repair run, step by step, for its run report (samples are not traced). */
  onRunTrace?: (taskId: string, trace: RunTrace) => void | Promise<void>;
}

/** Runs the agent on every task and aggregates the report. Results are sorted by task id. */
export async function runBenchmark(options: RunBenchmarkOptions): Promise<BenchmarkReport> {
  const {
    tasks,
    sandbox,
    concurrency = 2,
    onProgress,
    feedback = "visible",
    samples = 0,
    judgeTimeoutMs = HIDDEN_JUDGE_TIMEOUT_MS,
  } = options;
  if (!Number.isInteger(samples) || samples < 0)
    throw new RangeError(`samples must be a whole number of at least 0, got ${samples}`);
  const settings = parseSettings({
    ...options.settings,
    ...(options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts } : {}),
    ...(options.tokenBudget !== undefined ? { tokenBudget: options.tokenBudget } : {}),
    ...(options.strategies?.[0] !== undefined ? { strategy: options.strategies[0] } : {}),
  });
  const compared = [...new Set(options.strategies ?? [])];
  const agent = options.agent ?? createAgent({ ...options.models, sandbox, modelCalls: options.modelCalls });
  const runner = options.runner ?? streamingRunner(agent);
  const judge = createJudge(sandbox, judgeTimeoutMs);
  const tracing = options.onRunTrace ? await traceMeta(agent, options.modelLabel.name) : undefined;
  const started = performance.now();
  let done = 0;
  const outcomes = await mapWithConcurrency(tasks, concurrency, async (task) => {
    const steps: RunStep[] | undefined = tracing ? [] : undefined;
    const outcome = await runTask(runner, task, settings, feedback, judge, steps);
    if (tracing && steps && steps.length > 0) await options.onRunTrace?.(task.task_id, traceRun(steps, tracing));
    if (samples > 0 && outcome.status !== "error")
      outcome.samples = await drawSamples(runner, task, settings, feedback, judge, samples);
    if (compared.length > 1) outcome.strategyRuns = {};
    for (const strategy of compared.slice(1)) {
      const run = await runTask(runner, task, { ...settings, strategy }, feedback, judge);
      const { solved, inputTokens, outputTokens, attemptRecords } = run;
      if (outcome.strategyRuns) outcome.strategyRuns[strategy] = { solved, inputTokens, outputTokens, attemptRecords };
    }
    done += 1;
    onProgress?.({ done, total: tasks.length, outcome });
    return outcome;
  });
  return summarizeBenchmark(outcomes, {
    model: options.modelLabel,
    dataset: options.dataset ?? "custom",
    feedback,
    settings: {
      maxAttempts: settings.maxAttempts,
      tokenBudget: settings.tokenBudget,
      concurrency,
      timeoutMs: settings.timeoutMs,
      temperature: settings.temperature,
      samples,
      candidates: settings.candidates,
      strategy: settings.strategy,
    },
    ...(compared.length > 1 ? { strategies: compared } : {}),
    wallMsTotal: performance.now() - started,
  });
}

async function traceMeta(agent: Agent, model: string): Promise<TraceMeta> {
  const graph = await agent.getGraphAsync({});
  return {
    models: [model],
    graph: {
      nodes: Object.keys(graph.nodes),
      edges: graph.edges.map((edge) => ({ source: edge.source, target: edge.target })),
    },
  };
}

async function runTask(
  runner: TaskRunner,
  task: BenchmarkTask,
  settings: Settings,
  feedback: FeedbackMode,
  judge: Judge,
  steps?: RunStep[],
): Promise<TaskOutcome> {
  const started = performance.now();
  try {
    const { state, attempts, hasVisibleTests } = await runCapturing(runner, task, settings, feedback, steps);
    const records: AttemptRecord[] = [];
    for (const attempt of attempts) {
      records.push({
        attempt: attempt.attempt,
        node: attempt.node,
        feedback: attempt.feedback,
        tokens: attempt.tokens,
        code: attempt.code,
        hidden: await judge(attempt.code, task),
        handoverPassed: (await judge(attempt.handover, task)).passed,
      });
    }
    const handover = attempts.at(-1)?.handover;
    const finalVerdict = handover === undefined ? undefined : await judge(handover, task);
    return outcomeFromRun(
      task.task_id,
      state,
      records,
      finalVerdict,
      settings.maxAttempts,
      hasVisibleTests,
      performance.now() - started,
    );
  } catch (error) {
    return {
      taskId: task.task_id,
      status: "error",
      attempts: 0,
      feedbackPassed: false,
      solved: false,
      solvedFirstAttempt: false,
      solvedWithin: Array.from({ length: settings.maxAttempts }, () => false),
      hasVisibleTests: false,
      inputTokens: 0,
      outputTokens: 0,
      modelCalls: 0,
      wallMs: Math.round(performance.now() - started),
      attemptOutcomes: [],
      finalErrorClass: "HarnessError",
      tokensByErrorClass: {},
      reason: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      attemptRecords: [],
    };
  }
}

/**
 * Independent samples: fresh one-attempt runs with the same feedback. Resampling hands over the
 * first sample its feedback passes, else the best scored so far, the same rule as a repair run.
 */
async function drawSamples(
  runner: TaskRunner,
  task: BenchmarkTask,
  settings: Settings,
  feedback: FeedbackMode,
  judge: Judge,
  count: number,
): Promise<SampleRecord[]> {
  const records: SampleRecord[] = [];
  let handover: { code: string; score: number; passedFeedback: boolean } | undefined;
  for (let sample = 1; sample <= count; sample += 1) {
    let captured: CapturedAttempt | undefined;
    try {
      const run = await runCapturing(runner, task, { ...settings, maxAttempts: 1 }, feedback);
      captured = run.attempts[0];
    } catch {
      captured = undefined;
    }
    const code = captured?.code ?? "";
    const feedbackPassed = captured?.feedback === "passed";
    const score = captured?.score ?? 0;
    if (handover === undefined || (!handover.passedFeedback && (feedbackPassed || score > handover.score))) {
      handover = { code, score, passedFeedback: feedbackPassed };
    }
    records.push({
      sample,
      feedback: captured?.feedback ?? "HarnessError",
      tokens: captured?.tokens ?? 0,
      code,
      hidden: await judge(code, task),
      handoverPassed: (await judge(handover.code, task)).passed,
    });
  }
  return records;
}
