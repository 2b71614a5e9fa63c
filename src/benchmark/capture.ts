import { type Agent, type AgentState, type RunInput, runEvents, type Settings } from "../internal.js";
import type { RunStep } from "../report/index.js";
import type { BenchmarkTask } from "./dataset.js";
import { buildBenchmarkTask, type FeedbackMode, testsForTask } from "./task-input.js";

// How a task's run is read: the runner that streams it, and the attempts captured from its states.

/** What a run looked like right after the critic judged each attempt, read from the stream. */
export interface CapturedAttempt {
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
 * Runs one benchmark task to its end and yields the run's states as they come, each with the
 * node(s) that made it where known. The default streams the agent in this process
 * (`streamingRunner`); `selfheal bench --queue` hands the task to the queue's workers and replays
 * the finished thread's checkpoints, which hold the same states.
 */
export type TaskRunner = (input: BenchmarkInput, settings: Settings) => AsyncIterable<RunStep>;

export function streamingRunner(agent: Agent): TaskRunner {
  return async function* (input, settings) {
    for await (const event of runEvents(agent, input, { context: settings })) {
      if (event.kind !== "state") continue;
      // No checkpoint to read the time from: the time the step reached us is as good for a report.
      yield {
        values: event.state,
        createdAt: new Date().toISOString(),
        ...(event.nodes.length > 0 ? { node: event.nodes.join(", ") } : {}),
      };
    }
  };
}

export async function runCapturing(
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
