import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BenchmarkTask, loadDataset } from "../src/benchmark/dataset.js";
import {
  type BenchmarkReport,
  FIRST_ATTEMPT,
  formatBenchmarkTable,
  outcomeFromState,
  type RunBenchmarkOptions,
  runBenchmark,
} from "../src/benchmark/run.js";
import { SIMULATED_MODEL_LABEL, SimulatedBenchmarkModel } from "../src/benchmark/simulated-model.js";
import { emptyUsage } from "../src/core/state.js";
import { createSandbox } from "../src/sandbox/index.js";

const sandbox = createSandbox({ prewarm: ["python"] });
afterAll(() => sandbox.close());

// A spread of real tasks: plain loops, helpers in the prompt (32, 38, 50), string work (10), a fold (55).
// In 50 the first mutant's body equals the prompt's own encode_shift body.
const TASK_IDS = ["HumanEval/0", "HumanEval/10", "HumanEval/32", "HumanEval/38", "HumanEval/50", "HumanEval/55"];
let tasks: BenchmarkTask[];
let model: SimulatedBenchmarkModel;

beforeAll(async () => {
  tasks = await loadDataset({ taskIds: TASK_IDS });
  model = await SimulatedBenchmarkModel.forTasks(tasks, sandbox);
}, 60_000);

const simulatedRun = (overrides: Partial<RunBenchmarkOptions> = {}) =>
  runBenchmark({
    tasks,
    sandbox,
    models: { model },
    modelLabel: { name: "simulated", simulated: true, label: SIMULATED_MODEL_LABEL },
    dataset: "humaneval",
    ...overrides,
  });

/** Everything but wall-clock times, which no run can reproduce. */
function withoutTimes(report: BenchmarkReport) {
  const { wallMs: _wall, perTask, ...rest } = report;
  return { ...rest, perTask: perTask.map(({ wallMs: _taskWall, ...outcome }) => outcome) };
}

describe("benchmark run with the simulated model", () => {
  it("fails each task with its mutant, repairs it from the traceback and reports the pass", async () => {
    const report = await simulatedRun();
    expect(report.tasks).toBe(TASK_IDS.length);
    expect(report.solvedFirstAttempt).toBe(0);
    expect(report.solvedWithinLimit).toBe(TASK_IDS.length);
    expect(report.passAt1).toBe(0);
    expect(report.passWithinLimit).toBe(1);
    expect(report.meanAttemptsSolved).toBe(2);
    for (const outcome of report.perTask) {
      expect(outcome.status).toBe("passed");
      expect(outcome.attemptOutcomes).toHaveLength(2);
      expect(outcome.attemptOutcomes[0]).not.toBe("passed");
      expect(outcome.attemptOutcomes[1]).toBe("passed");
      expect(outcome.inputTokens).toBeGreaterThan(0);
    }
    expect(report.perTask.map((outcome) => outcome.taskId)).toEqual(TASK_IDS);
    expect(report.tokensByErrorClass[FIRST_ATTEMPT]).toBeGreaterThan(0);
    expect(report.tokens.inputPerSolved).toBe(report.tokens.inputPerTask);
  }, 120_000);

  it("shows the fixer the failing assertion but never the hidden test suite", async () => {
    const [task] = tasks;
    const watched = await SimulatedBenchmarkModel.forTasks([task!], sandbox);
    await runBenchmark({
      tasks: [task!],
      sandbox,
      models: { model: watched },
      modelLabel: { name: "simulated", simulated: true },
    });
    const seen = watched.prompts.map((messages) => messages.map((message) => String(message.content)).join("\n"));
    expect(seen).toHaveLength(2);
    expect(seen[1]).toMatch(/AssertionError/);
    for (const prompt of seen) expect(prompt).not.toContain(task!.test.trim());
  }, 60_000);

  it("gives the same report for the same tasks, apart from wall time", async () => {
    const first = await simulatedRun({ concurrency: 2 });
    const second = await simulatedRun({ concurrency: 1 });
    expect(withoutTimes(second)).toEqual({ ...withoutTimes(first), settings: { ...first.settings, concurrency: 1 } });
  }, 120_000);

  it("counts tasks as failed, by error class, when the attempt limit leaves no room to repair", async () => {
    const report = await simulatedRun({ maxAttempts: 1 });
    expect(report.solvedWithinLimit).toBe(0);
    expect(report.statusCounts.failed).toBe(TASK_IDS.length);
    const failures = Object.values(report.failuresByErrorClass).reduce((sum, count) => sum + count, 0);
    expect(failures).toBe(TASK_IDS.length);
    expect(report.meanAttemptsSolved).toBeNull();
    expect(report.tokens.inputPerSolved).toBeNull();
  }, 60_000);

  it("counts budget-exhausted tasks", async () => {
    const report = await simulatedRun({ tokenBudget: 50 });
    expect(report.statusCounts.budget_exhausted).toBe(TASK_IDS.length);
    expect(report.solvedWithinLimit).toBe(0);
  }, 60_000);

  it("labels a simulated report as not a model result when printed", async () => {
    const report = await simulatedRun({ tasks: tasks.slice(0, 1) });
    const table = formatBenchmarkTable(report);
    expect(table.startsWith("SIMULATED MODEL")).toBe(true);
    expect(table).toMatch(/simulated \(SIMULATED, not a model result\)/);
    expect(report.model).toMatchObject({ simulated: true });
  }, 60_000);
});

describe("outcomeFromState", () => {
  it("charges each repair's tokens to the error class it repaired", () => {
    const outcome = outcomeFromState(
      "T/1",
      {
        status: "passed",
        attempt: 3,
        reason: "ok",
        usage: { ...emptyUsage(), inputTokens: 900, outputTokens: 300, totalTokens: 1200, calls: 3 },
        history: [
          { attempt: 1, node: "generator", codeHash: "a", outcome: "NameError", tokens: 400 },
          { attempt: 2, node: "fixer", codeHash: "b", outcome: "AssertionError", tokens: 450 },
          { attempt: 3, node: "fixer", codeHash: "c", outcome: "passed", tokens: 350 },
        ],
      },
      1234.4,
    );
    expect(outcome).toMatchObject({ solved: true, solvedFirstAttempt: false, attempts: 3, wallMs: 1234 });
    expect(outcome.tokensByErrorClass).toEqual({ [FIRST_ATTEMPT]: 400, NameError: 450, AssertionError: 350 });
    expect(outcome.finalErrorClass).toBeUndefined();
  });

  it("names the last failure's class for an unsolved task", () => {
    const outcome = outcomeFromState(
      "T/1",
      {
        status: "stuck",
        attempt: 2,
        reason: "same error",
        usage: emptyUsage(),
        history: [
          { attempt: 1, node: "generator", codeHash: "a", outcome: "IndexError", tokens: 1 },
          { attempt: 2, node: "fixer", codeHash: "b", outcome: "IndexError", tokens: 1 },
        ],
      },
      10,
    );
    expect(outcome).toMatchObject({ solved: false, status: "stuck", finalErrorClass: "IndexError" });
  });
});
