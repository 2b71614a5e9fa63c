import {
  type Agent,
  type AgentModels,
  type AgentState,
  createAgent,
  type ModelCallsMode,
  parseSettings,
  type RunInput,
  type RunStatusValue,
  type Sandbox,
  type Settings,
  type SettingsInput,
  type Strategy,
} from "../index.js";
import { type RunStep, type RunTrace, type TraceMeta, traceRun } from "../report/index.js";
import { type BenchmarkTask, buildHiddenTests } from "./dataset.js";
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
import { mapWithConcurrency } from "./pool.js";
import { HIDDEN_JUDGE_TIMEOUT_MS, type JudgeVerdict, judgeProgram } from "./verify.js";
import { buildVisibleTests } from "./visible-tests.js";

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

/**
 * What a failed attempt may learn from. `visible`: the task's own examples and the program's
 * self-checks, what a user would have; the hidden tests judge only when the run has ended.
 * `oracle`: the hidden tests are the run's tests, so their failures reach the fixer.
 */
export const FEEDBACK_MODES = ["visible", "oracle"] as const;
export type FeedbackMode = (typeof FEEDBACK_MODES)[number];

export const FEEDBACK_LABELS: Record<FeedbackMode, string> = {
  visible:
    "feedback: visible (the docstring's examples and the program's own self-checks); the hidden tests judge each run once it has ended",
  oracle:
    "ORACLE FEEDBACK: the hidden tests were the run's tests and their failures reached the fixer. " +
    "Repair figures made so are not comparable with published ones (Reflexion, LDB, AgentCoder repair from visible tests only).",
};

/**
 * A run's tests under a feedback mode, and the hidden tests, which the benchmark keeps to itself:
 * they never enter the run (its input, state or checkpoints) and judge its programs once it has ended.
 */
export function testsForTask(task: BenchmarkTask, feedback: FeedbackMode): { tests?: string; hiddenTests: string } {
  const hiddenTests = buildHiddenTests(task);
  if (feedback === "oracle") return { tests: hiddenTests, hiddenTests };
  const visible = buildVisibleTests(task);
  return visible === null ? { hiddenTests } : { tests: visible, hiddenTests };
}

/** How one task ended. `error` means our own harness or graph threw, not that the program failed. */
export type TaskStatus = RunStatusValue | "error";

/** One executed program of a repair run, judged on the hidden tests after the run. */
export interface AttemptRecord {
  attempt: number;
  /** The node that wrote it: `generator` or `fixer`. */
  node: string;
  /** What the run's own feedback said: `passed` or the error class. */
  feedback: string;
  /** Tokens spent writing it. */
  tokens: number;
  code: string;
  hidden: Pick<JudgeVerdict, "passed" | "status" | "error" | "errorClass">;
  /** Whether the program the run would hand over, had it stopped after this attempt, passes the hidden tests. */
  handoverPassed: boolean;
}

/** One independent sample: a fresh run limited to one attempt. */
export interface SampleRecord {
  sample: number;
  feedback: string;
  tokens: number;
  code: string;
  hidden: AttemptRecord["hidden"];
  /** Whether resampling, stopped after this sample, hands over a program that passes the hidden tests. */
  handoverPassed: boolean;
}

export interface TaskOutcome {
  taskId: string;
  status: TaskStatus;
  /** Programs executed. */
  attempts: number;
  /** The run's own feedback passed (it stopped satisfied); says nothing of the hidden tests. */
  feedbackPassed: boolean;
  /** The program the run handed over passes the hidden tests. */
  solved: boolean;
  /** The very first program passes the hidden tests: pass@1 without self-correction. */
  solvedFirstAttempt: boolean;
  /** Entry k-1: the handover after k attempts passes the hidden tests, for k = 1..maxAttempts. */
  solvedWithin: boolean[];
  /** The prompt gave examples the run could test against (always true under oracle feedback). */
  hasVisibleTests: boolean;
  inputTokens: number;
  outputTokens: number;
  modelCalls: number;
  wallMs: number;
  /** The run's feedback on each attempt: `passed` or the error class that failed it. */
  attemptOutcomes: string[];
  /** For an unsolved task: why the hidden tests rejected its handover (or its status when nothing ran). */
  finalErrorClass?: string;
  /**
   * Tokens by what they were spent on: `first attempt`, or the error class of the failure the
   * next program was written to repair.
   */
  tokensByErrorClass: Record<string, number>;
  reason?: string;
  attemptRecords: AttemptRecord[];
  /** Present with `samples`: the independent samples, judged the same way. */
  samples?: SampleRecord[];
  /**
   * Present with `strategies`: the same task run again under each other strategy, at the same
   * candidates and budget; one step per round, judged on the hidden tests like the main run.
   */
  strategyRuns?: Partial<
    Record<Strategy, Pick<TaskOutcome, "solved" | "inputTokens" | "outputTokens" | "attemptRecords">>
  >;
}

/** Each strategy's figures at equal settings (see RunBenchmarkOptions.strategies). */
export interface StrategySummary {
  candidates: number;
  strategies: Strategy[];
  perStrategy: Partial<
    Record<Strategy, { solved: number; tokensPerTask: number; solvedPerThousandTokens: number | null }>
  >;
}

export interface SamplingSummary {
  samples: number;
  /** Entry k-1: the unbiased pass@k over tasks, for k = 1..samples. */
  passAtK: number[];
  /** Entry j-1: resampling (first sample that passes its feedback, else the best scored) solves this many after j samples. */
  solvedWithin: number[];
  tokens: number;
  tokensPerTask: number;
  solvedPerThousandTokens: number | null;
  /** Resampling given, per task, the tokens repair spent on it; beside repair's own solved count. */
  atRepairTokens: { resampling: number; repair: number };
}

export interface BenchmarkReport {
  /** Who produced the answers. A simulated report says so here and in every rendering. */
  model: { name: string; simulated: boolean; label?: string };
  dataset: string;
  feedback: { mode: FeedbackMode; label: string; tasksWithVisibleTests: number };
  settings: {
    maxAttempts: number;
    tokenBudget: number;
    concurrency: number;
    timeoutMs: number;
    temperature: number;
    samples: number;
    /** Candidates per round, and what follows a failed round (the main run's). */
    candidates?: number;
    strategy?: Strategy;
  };
  tasks: number;
  /** The first program passes the hidden tests. */
  solvedFirstAttempt: number;
  /** The program each run handed over passes the hidden tests. */
  solvedFinal: number;
  /** Entry k-1: solved had each run stopped after k attempts, k = 1..maxAttempts. */
  solvedWithin: number[];
  /** Runs that stopped because their own feedback passed, and of those, how many the hidden tests reject. */
  feedbackPassed: number;
  feedbackPassedHiddenFailed: number;
  /** Fractions of `tasks`, 0..1. */
  passAt1: number;
  passFinal: number;
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
    solvedPerThousandTokens: number | null;
  };
  wallMs: { total: number; meanPerTask: number };
  statusCounts: Record<TaskStatus, number>;
  /** Unsolved tasks by why the hidden tests rejected their handover. */
  failuresByErrorClass: Record<string, number>;
  /** All tasks' tokens by the error class they were spent repairing (see TaskOutcome). */
  tokensByErrorClass: Record<string, number>;
  sampling?: SamplingSummary;
  /** The charts' data: repair against resampling, by programs written and by tokens per task. */
  curves: {
    byAttempt: { programs: number[]; repair: number[]; resampling: number[] | null };
    byTokens: {
      budgets: number[];
      repair: number[];
      resampling: number[] | null;
      /** With `strategies`: solved within each budget, one curve per strategy (rounds of `candidates`). */
      strategies?: Partial<Record<Strategy, number[]>>;
    };
  };
  /** Present with `strategies`. */
  strategies?: StrategySummary;
  perTask: TaskOutcome[];
}

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

export const FIRST_ATTEMPT = "first attempt";

/** Natural order, so HumanEval/2 comes before HumanEval/10. */
export const compareTaskIds = (a: string, b: string): number => a.localeCompare(b, "en", { numeric: true });

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

type Judge = (program: string, hiddenTests: string) => Promise<AttemptRecord["hidden"]>;

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

/** The hidden-test judge, run only after a run has ended; one program is judged once however often it recurs. */
function createJudge(sandbox: Sandbox, timeoutMs: number): Judge {
  const verdicts = new Map<string, Promise<AttemptRecord["hidden"]>>();
  return (program, hiddenTests) => {
    if (program.trim() === "")
      return Promise.resolve({
        passed: false,
        status: "error",
        errorClass: "NoProgram",
        error: "no program was written",
      });
    const key = `${program}\u0000${hiddenTests}`;
    let verdict = verdicts.get(key);
    if (verdict === undefined) {
      verdict = judgeProgram(sandbox, program, hiddenTests, timeoutMs).then(
        ({ passed, status, error, errorClass }) => ({
          passed,
          status,
          ...(error !== undefined ? { error } : {}),
          ...(errorClass !== undefined ? { errorClass } : {}),
        }),
      );
      verdicts.set(key, verdict);
    }
    return verdict;
  };
}

/** What a run looked like right after the critic judged each attempt, read from the stream. */
interface CapturedAttempt {
  attempt: number;
  node: string;
  feedback: string;
  tokens: number;
  code: string;
  /** The program the CLI would hand over at this point: the passing one, else the best so far. */
  handover: string;
  /** The critic's score when this attempt is the best so far (always, for a one-attempt sample), else 0. */
  score: number;
}

/** What a benchmark task's run starts from: the run input alone (the judge keeps the hidden tests). */
export type BenchmarkInput = RunInput;

/**
 * Runs one task to its end and yields the run's state after each step. The default streams the
 * agent in this process; `selfheal bench --queue` hands the task to the queue's workers and replays
 * the finished thread's checkpoints, which hold the same states.
 */
/**
 * Runs one benchmark task and yields the run's states as they come, each with the node(s) that
 * made it where known: in this process (`streamingRunner`) or elsewhere (the CLI's queue runner).
 */
export type TaskRunner = (input: BenchmarkInput, settings: Settings) => AsyncIterable<RunStep>;

export function streamingRunner(agent: Agent): TaskRunner {
  return async function* (input, settings) {
    // The node names come only with updates, each step's before its values.
    let ran: string[] = [];
    for await (const [mode, chunk] of await agent.stream(input, {
      context: settings,
      streamMode: ["updates", "values"],
    })) {
      if (mode === "updates") {
        ran.push(...Object.keys(chunk));
        continue;
      }
      // No checkpoint to read the time from: the time the step reached us is as good for a report.
      yield {
        values: chunk as AgentState,
        createdAt: new Date().toISOString(),
        ...(ran.length > 0 ? { node: ran.join(", ") } : {}),
      };
      ran = [];
    }
  };
}

async function runCapturing(
  runner: TaskRunner,
  task: BenchmarkTask,
  settings: Settings,
  feedback: FeedbackMode,
  steps?: RunStep[],
): Promise<{ state: AgentState; attempts: CapturedAttempt[]; hiddenTests: string; hasVisibleTests: boolean }> {
  const { tests, hiddenTests } = testsForTask(task, feedback);
  const input: BenchmarkInput = {
    task: buildBenchmarkTask(task),
    language: "python" as const,
    ...(tests !== undefined ? { tests } : {}),
  };
  const attempts: CapturedAttempt[] = [];
  let state: AgentState | undefined;
  for await (const step of runner(input, settings)) {
    state = step.values as AgentState;
    steps?.push(step);
    while (state.history.length > attempts.length) {
      const entry = state.history[attempts.length]!;
      const code = state.draft?.hasCode === false ? "" : state.code;
      const passed = entry.outcome === "passed";
      attempts.push({
        attempt: entry.attempt,
        node: entry.node,
        feedback: entry.outcome,
        tokens: entry.tokens,
        code,
        handover: passed ? code : (state.best?.code ?? code),
        score: passed ? 100 : state.best?.attempt === entry.attempt ? state.best.score : 0,
      });
    }
  }
  if (state === undefined) throw new Error(`the agent streamed no state for ${task.task_id}`);
  return { state, attempts, hiddenTests, hasVisibleTests: tests !== undefined };
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
    const { state, attempts, hiddenTests, hasVisibleTests } = await runCapturing(
      runner,
      task,
      settings,
      feedback,
      steps,
    );
    const records: AttemptRecord[] = [];
    for (const attempt of attempts) {
      records.push({
        attempt: attempt.attempt,
        node: attempt.node,
        feedback: attempt.feedback,
        tokens: attempt.tokens,
        code: attempt.code,
        hidden: await judge(attempt.code, hiddenTests),
        handoverPassed: (await judge(attempt.handover, hiddenTests)).passed,
      });
    }
    const handover = attempts.at(-1)?.handover;
    const finalVerdict = handover === undefined ? undefined : await judge(handover, hiddenTests);
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
    const hiddenTests = buildHiddenTests(task);
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
      hidden: await judge(code, hiddenTests),
      handoverPassed: (await judge(handover.code, hiddenTests)).passed,
    });
  }
  return records;
}

/** Reads one finished run, and the hidden judge's verdicts on its programs, into the benchmark's terms. Exported for tests. */
export function outcomeFromRun(
  taskId: string,
  state: Pick<AgentState, "status" | "attempt" | "history" | "usage" | "reason">,
  records: readonly AttemptRecord[],
  finalVerdict: AttemptRecord["hidden"] | undefined,
  maxAttempts: number,
  hasVisibleTests: boolean,
  wallMs: number,
): TaskOutcome {
  const solved = finalVerdict?.passed ?? false;
  const attemptOutcomes = state.history.map((entry) => entry.outcome);
  const tokensByErrorClass: Record<string, number> = {};
  state.history.forEach((entry, index) => {
    const spentOn = index === 0 ? FIRST_ATTEMPT : (state.history[index - 1]?.outcome ?? FIRST_ATTEMPT);
    tokensByErrorClass[spentOn] = (tokensByErrorClass[spentOn] ?? 0) + entry.tokens;
  });
  const solvedWithin = Array.from(
    { length: maxAttempts },
    (_, index) => records[Math.min(index, records.length - 1)]?.handoverPassed ?? false,
  );
  return {
    taskId,
    status: state.status,
    attempts: state.attempt,
    feedbackPassed: state.status === "passed",
    solved,
    solvedFirstAttempt: records[0]?.hidden.passed ?? false,
    solvedWithin,
    hasVisibleTests,
    inputTokens: state.usage.inputTokens,
    outputTokens: state.usage.outputTokens,
    modelCalls: state.usage.calls,
    wallMs: Math.round(wallMs),
    attemptOutcomes,
    ...(solved ? {} : { finalErrorClass: finalVerdict?.errorClass ?? state.status }),
    tokensByErrorClass,
    ...(state.reason !== undefined ? { reason: state.reason } : {}),
    attemptRecords: [...records],
  };
}

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

const percent = (fraction: number): string => `${(fraction * 100).toFixed(1)}%`;
const ofTasks = (solved: number, tasks: number): string => `${solved} (${percent(tasks === 0 ? 0 : solved / tasks)})`;

/** The headline lines every rendering starts with: who answered, and what the runs learned from. */
export function reportBanner(report: BenchmarkReport): string[] {
  const lines: string[] = [];
  if (report.model.simulated)
    lines.push(report.model.label ?? "SIMULATED MODEL: these figures test the harness, not a model.");
  if (report.feedback.mode === "oracle") lines.push(report.feedback.label);
  return lines;
}

/** The report's figures as label/value rows, shared by the terminal table and the HTML report. */
export function summaryRows(report: BenchmarkReport): Array<[string, string]> {
  const { maxAttempts } = report.settings;
  const feedback =
    report.feedback.mode === "oracle"
      ? "ORACLE (hidden tests reach the fixer)"
      : `visible: docstring examples (${report.feedback.tasksWithVisibleTests} of ${report.tasks} tasks) and self-checks`;
  const rows: Array<[string, string]> = [
    ["model", report.model.simulated ? `${report.model.name} (SIMULATED, not a model result)` : report.model.name],
    ["dataset", report.dataset],
    ["feedback", feedback],
    ["tasks", String(report.tasks)],
    ["pass@1, first attempt (hidden tests)", ofTasks(report.solvedFirstAttempt, report.tasks)],
    [`final pass, hidden tests (max ${maxAttempts} attempts)`, ofTasks(report.solvedFinal, report.tasks)],
    [`solved within 1..${maxAttempts} attempts`, report.solvedWithin.join(" / ")],
    [
      "runs passing their own feedback",
      `${report.feedbackPassed} (hidden tests reject ${report.feedbackPassedHiddenFailed})`,
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
    [
      "solved per 1k tokens, repair",
      report.tokens.solvedPerThousandTokens === null ? "-" : report.tokens.solvedPerThousandTokens.toFixed(3),
    ],
  ];
  const sampling = report.sampling;
  if (sampling) {
    rows.push(
      [
        `pass@k, k = 1..${sampling.samples} (unbiased, ${sampling.samples} samples)`,
        sampling.passAtK.map(percent).join(" / "),
      ],
      [`resampling: solved within 1..${sampling.samples} samples`, sampling.solvedWithin.join(" / ")],
      ["tokens per task, resampling", sampling.tokensPerTask.toFixed(0)],
      [
        "solved per 1k tokens, resampling",
        sampling.solvedPerThousandTokens === null ? "-" : sampling.solvedPerThousandTokens.toFixed(3),
      ],
      [
        "at repair's tokens: resampling / repair",
        `${sampling.atRepairTokens.resampling} / ${sampling.atRepairTokens.repair}`,
      ],
    );
  }
  const compared = report.strategies;
  if (compared) {
    for (const strategy of compared.strategies) {
      const figures = compared.perStrategy[strategy];
      if (!figures) continue;
      rows.push([
        `${strategy}, ${compared.candidates} candidate${compared.candidates === 1 ? "" : "s"}: solved / tokens per task / per 1k`,
        `${figures.solved} / ${figures.tokensPerTask.toFixed(0)} / ${figures.solvedPerThousandTokens === null ? "-" : figures.solvedPerThousandTokens.toFixed(3)}`,
      ]);
    }
  }
  rows.push(
    ["wall time per task", `${(report.wallMs.meanPerTask / 1000).toFixed(2)} s`],
    ["total wall time", `${(report.wallMs.total / 1000).toFixed(1)} s (concurrency ${report.settings.concurrency})`],
    [
      "failed / stuck / budget exhausted",
      `${report.statusCounts.failed} / ${report.statusCounts.stuck} / ${report.statusCounts.budget_exhausted}`,
    ],
  );
  if (report.statusCounts.model_error > 0) rows.push(["model errors", String(report.statusCounts.model_error)]);
  if (report.statusCounts.error > 0) rows.push(["harness errors", String(report.statusCounts.error)]);
  const failures = Object.entries(report.failuresByErrorClass);
  rows.push([
    "failures by error class (hidden)",
    failures.length === 0 ? "none" : failures.map(([name, n]) => `${name} ${n}`).join(", "),
  ]);
  const tokens = Object.entries(report.tokensByErrorClass);
  rows.push([
    "tokens by error class repaired",
    tokens.length === 0 ? "none" : tokens.map(([name, n]) => `${name} ${n}`).join(", "),
  ]);
  return rows;
}

/** The report as an aligned two-column table for the terminal. */
export function formatBenchmarkTable(report: BenchmarkReport): string {
  const rows = summaryRows(report);
  const width = Math.max(...rows.map(([name]) => name.length));
  const lines = rows.map(([name, value]) => `${name.padEnd(width)}  ${value}`);
  const banner = reportBanner(report);
  return [...banner, ...(banner.length > 0 ? [""] : []), ...lines].join("\n");
}
