import {
  type Agent,
  type AgentModels,
  type AgentState,
  createAgent,
  parseSettings,
  type RunStatusValue,
  type Sandbox,
  type Settings,
  type SettingsInput,
} from "../index.js";
import { type BenchmarkTask, buildHiddenTests } from "./dataset.js";
import { mapWithConcurrency } from "./pool.js";

/**
 * What the agent is asked: the HumanEval prompt (signature and docstring) verbatim, plus the
 * one rule HumanEval's tests depend on: the helpers and imports in the prompt must stay, since
 * the hidden tests may call them.
 */
export function buildBenchmarkTask(task: BenchmarkTask): string {
  return [
    `Complete the Python function \`${task.entry_point}\` below so that it does what its docstring says.`,
    "Reply with the complete program: keep the imports, any helper functions and the signature exactly as given, and implement the body.",
    "",
    task.prompt.trimEnd(),
  ].join("\n");
}

/** How one task ended. `error` means our own harness or graph threw, not that the program failed. */
export type TaskStatus = RunStatusValue | "error";

export interface TaskOutcome {
  taskId: string;
  status: TaskStatus;
  /** Programs executed. */
  attempts: number;
  solved: boolean;
  /** Passed with the very first program: pass@1 without self-correction. */
  solvedFirstAttempt: boolean;
  inputTokens: number;
  outputTokens: number;
  modelCalls: number;
  wallMs: number;
  /** Outcome of each attempt: `passed` or the error class that failed it. */
  attemptOutcomes: string[];
  /** For an unsolved task: the class of its last failure (or its status when nothing ran). */
  finalErrorClass?: string;
  /**
   * Tokens by what they were spent on: `first attempt`, or the error class of the failure the
   * next program was written to repair.
   */
  tokensByErrorClass: Record<string, number>;
  reason?: string;
}

export interface BenchmarkReport {
  /** Who produced the answers. A simulated report says so here and in every rendering. */
  model: { name: string; simulated: boolean; label?: string };
  dataset: string;
  settings: { maxAttempts: number; tokenBudget: number; concurrency: number; timeoutMs: number };
  tasks: number;
  solvedFirstAttempt: number;
  solvedWithinLimit: number;
  /** Fractions of `tasks`, 0..1. */
  passAt1: number;
  passWithinLimit: number;
  /** Mean attempts over solved tasks; null when none was solved. */
  meanAttemptsSolved: number | null;
  tokens: {
    input: number;
    output: number;
    inputPerTask: number;
    outputPerTask: number;
    /** All tokens spent (solved and unsolved tasks) divided by tasks solved: the cost of a solution. */
    inputPerSolved: number | null;
    outputPerSolved: number | null;
  };
  wallMs: { total: number; meanPerTask: number };
  statusCounts: Record<TaskStatus, number>;
  /** Unsolved tasks by the class of their last failure. */
  failuresByErrorClass: Record<string, number>;
  /** All tasks' tokens by the error class they were spent repairing (see TaskOutcome). */
  tokensByErrorClass: Record<string, number>;
  perTask: TaskOutcome[];
}

export interface RunBenchmarkOptions {
  tasks: readonly BenchmarkTask[];
  /** Chat models to inject (the simulated model, or real ones built by the caller). */
  models?: AgentModels;
  /** A ready agent; when given, `models` is ignored. */
  agent?: Agent;
  sandbox: Sandbox;
  /** Tasks in flight at once. */
  concurrency?: number;
  maxAttempts?: number;
  tokenBudget?: number;
  /** Any other run setting (model name, timeout); the defaults are the agent's own. */
  settings?: SettingsInput;
  /** Names the answers' source in the report. */
  modelLabel: { name: string; simulated: boolean; label?: string };
  /** Where the tasks came from, for the report. */
  dataset?: string;
  onProgress?: (event: { done: number; total: number; outcome: TaskOutcome }) => void;
}

export const FIRST_ATTEMPT = "first attempt";

/** Natural order, so HumanEval/2 comes before HumanEval/10. */
export const compareTaskIds = (a: string, b: string): number => a.localeCompare(b, "en", { numeric: true });

/** Runs the agent on every task and aggregates the report. Results are sorted by task id. */
export async function runBenchmark(options: RunBenchmarkOptions): Promise<BenchmarkReport> {
  const { tasks, sandbox, concurrency = 2, onProgress } = options;
  const settings = parseSettings({
    ...options.settings,
    ...(options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts } : {}),
    ...(options.tokenBudget !== undefined ? { tokenBudget: options.tokenBudget } : {}),
  });
  const agent = options.agent ?? createAgent({ ...options.models, sandbox });
  const started = performance.now();
  let done = 0;
  const outcomes = await mapWithConcurrency(tasks, concurrency, async (task) => {
    const outcome = await runTask(agent, task, settings);
    done += 1;
    onProgress?.({ done, total: tasks.length, outcome });
    return outcome;
  });
  return summarizeBenchmark(outcomes, {
    model: options.modelLabel,
    dataset: options.dataset ?? "custom",
    settings: {
      maxAttempts: settings.maxAttempts,
      tokenBudget: settings.tokenBudget,
      concurrency,
      timeoutMs: settings.timeoutMs,
    },
    wallMsTotal: performance.now() - started,
  });
}

async function runTask(agent: Agent, task: BenchmarkTask, settings: Settings): Promise<TaskOutcome> {
  const started = performance.now();
  try {
    const state = await agent.invoke(
      { task: buildBenchmarkTask(task), language: "python", tests: buildHiddenTests(task) },
      { context: settings },
    );
    return outcomeFromState(task.task_id, state, performance.now() - started);
  } catch (error) {
    return {
      taskId: task.task_id,
      status: "error",
      attempts: 0,
      solved: false,
      solvedFirstAttempt: false,
      inputTokens: 0,
      outputTokens: 0,
      modelCalls: 0,
      wallMs: Math.round(performance.now() - started),
      attemptOutcomes: [],
      finalErrorClass: "HarnessError",
      tokensByErrorClass: {},
      reason: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    };
  }
}

/** Reads one finished run into the benchmark's terms. Exported for tests. */
export function outcomeFromState(
  taskId: string,
  state: Pick<AgentState, "status" | "attempt" | "history" | "usage" | "reason">,
  wallMs: number,
): TaskOutcome {
  const solved = state.status === "passed";
  const attemptOutcomes = state.history.map((entry) => entry.outcome);
  const tokensByErrorClass: Record<string, number> = {};
  state.history.forEach((entry, index) => {
    const spentOn = index === 0 ? FIRST_ATTEMPT : (state.history[index - 1]?.outcome ?? FIRST_ATTEMPT);
    tokensByErrorClass[spentOn] = (tokensByErrorClass[spentOn] ?? 0) + entry.tokens;
  });
  const lastOutcome = attemptOutcomes.at(-1);
  return {
    taskId,
    status: state.status,
    attempts: state.attempt,
    solved,
    solvedFirstAttempt: solved && state.attempt === 1,
    inputTokens: state.usage.inputTokens,
    outputTokens: state.usage.outputTokens,
    modelCalls: state.usage.calls,
    wallMs: Math.round(wallMs),
    attemptOutcomes,
    ...(solved
      ? {}
      : { finalErrorClass: lastOutcome !== undefined && lastOutcome !== "passed" ? lastOutcome : state.status }),
    tokensByErrorClass,
    ...(state.reason !== undefined ? { reason: state.reason } : {}),
  };
}

const round = (value: number, digits = 2): number => Number(value.toFixed(digits));

function sortedRecord(record: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(record).sort(([a, x], [b, y]) => y - x || a.localeCompare(b)));
}

export function summarizeBenchmark(
  outcomes: readonly TaskOutcome[],
  meta: {
    model: BenchmarkReport["model"];
    dataset: string;
    settings: BenchmarkReport["settings"];
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
  return {
    model: meta.model,
    dataset: meta.dataset,
    settings: meta.settings,
    tasks: count,
    solvedFirstAttempt: perTask.filter((outcome) => outcome.solvedFirstAttempt).length,
    solvedWithinLimit: solved.length,
    passAt1: count === 0 ? 0 : round(perTask.filter((outcome) => outcome.solvedFirstAttempt).length / count, 4),
    passWithinLimit: count === 0 ? 0 : round(solved.length / count, 4),
    meanAttemptsSolved:
      solved.length === 0 ? null : round(solved.reduce((sum, outcome) => sum + outcome.attempts, 0) / solved.length),
    tokens: {
      input,
      output,
      inputPerTask: perTaskMean(input),
      outputPerTask: perTaskMean(output),
      inputPerSolved: perSolved(input),
      outputPerSolved: perSolved(output),
    },
    wallMs: {
      total: Math.round(meta.wallMsTotal),
      meanPerTask: count === 0 ? 0 : Math.round(perTask.reduce((sum, outcome) => sum + outcome.wallMs, 0) / count),
    },
    statusCounts,
    failuresByErrorClass: sortedRecord(failuresByErrorClass),
    tokensByErrorClass: sortedRecord(tokensByErrorClass),
    perTask,
  };
}

const percent = (fraction: number): string => `${(fraction * 100).toFixed(1)}%`;

/** The report as an aligned two-column table for the terminal. */
export function formatBenchmarkTable(report: BenchmarkReport): string {
  const rows: Array<[string, string]> = [
    ["model", report.model.simulated ? `${report.model.name} (SIMULATED, not a model result)` : report.model.name],
    ["dataset", report.dataset],
    ["tasks", String(report.tasks)],
    ["solved on first attempt (pass@1)", `${report.solvedFirstAttempt} (${percent(report.passAt1)})`],
    [
      `solved within ${report.settings.maxAttempts} attempts`,
      `${report.solvedWithinLimit} (${percent(report.passWithinLimit)})`,
    ],
    ["mean attempts of solved", report.meanAttemptsSolved === null ? "-" : report.meanAttemptsSolved.toFixed(2)],
    ["input tokens per task", report.tokens.inputPerTask.toFixed(0)],
    ["output tokens per task", report.tokens.outputPerTask.toFixed(0)],
    [
      "input tokens per solved task",
      report.tokens.inputPerSolved === null ? "-" : report.tokens.inputPerSolved.toFixed(0),
    ],
    [
      "output tokens per solved task",
      report.tokens.outputPerSolved === null ? "-" : report.tokens.outputPerSolved.toFixed(0),
    ],
    ["wall time per task", `${(report.wallMs.meanPerTask / 1000).toFixed(2)} s`],
    ["total wall time", `${(report.wallMs.total / 1000).toFixed(1)} s (concurrency ${report.settings.concurrency})`],
    [
      "failed / stuck / budget exhausted",
      `${report.statusCounts.failed} / ${report.statusCounts.stuck} / ${report.statusCounts.budget_exhausted}`,
    ],
  ];
  if (report.statusCounts.model_error > 0) rows.push(["model errors", String(report.statusCounts.model_error)]);
  if (report.statusCounts.error > 0) rows.push(["harness errors", String(report.statusCounts.error)]);
  const failures = Object.entries(report.failuresByErrorClass);
  rows.push([
    "failures by error class",
    failures.length === 0 ? "none" : failures.map(([name, n]) => `${name} ${n}`).join(", "),
  ]);
  const tokens = Object.entries(report.tokensByErrorClass);
  rows.push([
    "tokens by error class repaired",
    tokens.length === 0 ? "none" : tokens.map(([name, n]) => `${name} ${n}`).join(", "),
  ]);

  const width = Math.max(...rows.map(([name]) => name.length));
  const lines = rows.map(([name, value]) => `${name.padEnd(width)}  ${value}`);
  if (report.model.simulated)
    lines.unshift(report.model.label ?? "SIMULATED MODEL: these figures test the harness, not a model.", "");
  return lines.join("\n");
}
