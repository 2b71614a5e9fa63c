import type { AgentState, RunStatusValue, Strategy } from "../internal.js";
import type { JudgeVerdict } from "./judge.js";
import type { FeedbackMode } from "./task-input.js";

// What the benchmark records of each task and the report it sums them into: the shapes `--json`
// writes, and the reading of one finished run into them.

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

export const FIRST_ATTEMPT = "first attempt";

/** Natural order, so HumanEval/2 comes before HumanEval/10. */
export const compareTaskIds = (a: string, b: string): number => a.localeCompare(b, "en", { numeric: true });

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
