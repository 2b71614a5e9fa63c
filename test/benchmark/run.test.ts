import { MemorySaver } from "@langchain/langgraph";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BenchmarkInput, TaskRunner } from "../../src/benchmark/capture.js";
import { type BenchmarkTask, loadDataset } from "../../src/benchmark/dataset.js";
import { renderHtmlReport } from "../../src/benchmark/html-report.js";
import { type BenchmarkReport, FIRST_ATTEMPT, outcomeFromRun } from "../../src/benchmark/records.js";
import { type RunBenchmarkOptions, runBenchmark } from "../../src/benchmark/run.js";
import { SIMULATED_MODEL_LABEL, SimulatedBenchmarkModel } from "../../src/benchmark/simulated-model.js";
import { formatBenchmarkTable } from "../../src/benchmark/table.js";
import { emptyUsage } from "../../src/core/ledger.js";
import type { AgentState } from "../../src/core/state.js";
import { createAgent } from "../../src/index.js";
import { createSandbox } from "../../src/sandbox/index.js";

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
});

const simulatedRun = (overrides: Partial<RunBenchmarkOptions> = {}) =>
  runBenchmark({
    tasks,
    sandbox,
    models: { model },
    modelLabel: { name: "simulated", simulated: true, label: SIMULATED_MODEL_LABEL },
    dataset: "humaneval",
    ...overrides,
  });

/** Lines of the hidden tests that say something of their own (not shared with the prompt). */
function hiddenLines(task: BenchmarkTask): string[] {
  return task.test
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line.length >= 20 && !task.prompt.includes(line));
}

/** Everything but wall-clock times, which no run can reproduce. */
function withoutTimes(report: BenchmarkReport) {
  const { wallMs: _wall, perTask, ...rest } = report;
  return { ...rest, perTask: perTask.map(({ wallMs: _taskWall, ...outcome }) => outcome) };
}

describe("benchmark run with the simulated model", () => {
  it("fails each task that has examples with its mutant, repairs it from the visible failure and judges it on the hidden tests", async () => {
    const report = await simulatedRun();
    expect(report.tasks).toBe(TASK_IDS.length);
    expect(report.feedback.mode).toBe("visible");
    // 38 and 50 have no docstring example: the script sends the reference at once.
    const withExamples = ["HumanEval/0", "HumanEval/10", "HumanEval/32", "HumanEval/55"];
    expect(report.feedback.tasksWithVisibleTests).toBe(withExamples.length);
    expect(report.solvedFirstAttempt).toBe(2);
    expect(report.solvedFinal).toBe(TASK_IDS.length);
    expect(report.solvedWithin).toEqual([2, 6, 6, 6]);
    expect(report.passAt1).toBe(0.3333);
    expect(report.passFinal).toBe(1);
    for (const outcome of report.perTask) {
      expect(outcome.status).toBe("passed");
      expect(outcome.inputTokens).toBeGreaterThan(0);
      if (!withExamples.includes(outcome.taskId)) continue;
      expect(outcome.attemptOutcomes).toEqual(["AssertionError", "passed"]);
      expect(outcome.attemptRecords.map((record) => record.hidden.passed)).toEqual([false, true]);
    }
    expect(report.perTask.map((outcome) => outcome.taskId)).toEqual(TASK_IDS);
    expect(report.tokensByErrorClass[FIRST_ATTEMPT]).toBeGreaterThan(0);
    expect(report.tokens.inputPerSolved).toBe(report.tokens.inputPerTask);
  }, 120_000);

  it("shows the fixer the failing docstring example and never a hidden test", async () => {
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
    expect(seen[1]).toMatch(
      /AssertionError: example has_close_elements\(.*\) returned True, the task's docstring shows False/,
    );
    for (const prompt of seen) for (const line of hiddenLines(task!)) expect(prompt).not.toContain(line);
  });

  it("under oracle feedback gives the fixer the hidden assertion, and says so in the table", async () => {
    const [task] = tasks;
    const watched = await SimulatedBenchmarkModel.forTasks([task!], sandbox);
    const report = await runBenchmark({
      tasks: [task!],
      sandbox,
      models: { model: watched },
      feedback: "oracle",
      modelLabel: { name: "simulated", simulated: true },
    });
    const seen = watched.prompts.map((messages) => messages.map((message) => String(message.content)).join("\n"));
    expect(hiddenLines(task!).some((line) => seen[1]!.includes(line))).toBe(true);
    expect(report.feedback.mode).toBe("oracle");
    expect(formatBenchmarkTable(report)).toMatch(/ORACLE FEEDBACK/);
  });

  it("gives the same report for the same tasks, apart from wall time", async () => {
    const first = await simulatedRun({ concurrency: 2 });
    const second = await simulatedRun({ concurrency: 1 });
    expect(withoutTimes(second)).toEqual({ ...withoutTimes(first), settings: { ...first.settings, concurrency: 1 } });
  }, 120_000);

  it("counts unsolved tasks by the hidden tests' error class when the attempt limit leaves no room to repair", async () => {
    const report = await simulatedRun({ maxAttempts: 1 });
    expect(report.solvedFinal).toBe(2);
    expect(report.statusCounts.failed).toBe(4);
    expect(report.failuresByErrorClass).toEqual({ AssertionError: 4 });
    expect(report.meanAttemptsSolved).toBe(1);
  });

  it("counts budget-exhausted tasks", async () => {
    const report = await simulatedRun({ tokenBudget: 50 });
    expect(report.statusCounts.budget_exhausted).toBe(TASK_IDS.length);
    expect(report.solvedFinal).toBe(0);
    expect(report.tokens.inputPerSolved).toBeNull();
  });

  it("draws independent samples, scores them with pass@k and sets resampling beside repair", async () => {
    const report = await simulatedRun({ samples: 2 });
    // The script is deterministic: every sample of a task is its first answer.
    expect(report.sampling?.passAtK).toEqual([0.3333, 0.3333]);
    expect(report.sampling?.solvedWithin).toEqual([2, 2]);
    expect(report.sampling?.atRepairTokens).toEqual({ resampling: 2, repair: 6 });
    expect(report.curves.byAttempt.repair).toEqual([2, 6, 6, 6]);
    expect(report.curves.byAttempt.resampling).toEqual([2, 2]);
    expect(report.curves.byTokens.repair.at(-1)).toBe(6);
    expect(formatBenchmarkTable(report)).toMatch(/pass@k, k = 1\.\.2 \(unbiased, 2 samples\)\s+33\.3% \/ 33\.3%/);
  }, 120_000);

  it("keeps the hidden tests out of the run: no input or checkpoint holds them, and the verdicts are the same", async () => {
    // A runner that checkpoints every step, as `bench --queue`'s workers do, so each state can be read back.
    const checkpointer = new MemorySaver();
    const agent = createAgent({ model, sandbox, checkpointer });
    const inputs: BenchmarkInput[] = [];
    const runner: TaskRunner = async function* (input, settings) {
      inputs.push(input);
      const configurable = { thread_id: `hidden-${inputs.length}` };
      for await (const values of await agent.stream(input, { context: settings, configurable, streamMode: "values" }))
        yield { values: values as AgentState };
    };
    const checkpointed = await simulatedRun({ runner, concurrency: 1 });
    expect(withoutTimes(checkpointed)).toEqual(withoutTimes(await simulatedRun({ concurrency: 1 })));
    expect(inputs).toHaveLength(TASK_IDS.length);
    for (const input of inputs)
      expect(Object.keys(input).filter((key) => !["task", "language", "tests"].includes(key))).toEqual([]);
    const hidden = tasks.flatMap(hiddenLines);
    expect(hidden.length).toBeGreaterThan(TASK_IDS.length);
    let checkpoints = 0;
    for await (const tuple of checkpointer.list({})) {
      checkpoints += 1;
      const stored = JSON.stringify(tuple.checkpoint.channel_values);
      expect(tuple.checkpoint.channel_values).not.toHaveProperty("hiddenTests");
      for (const line of hidden) expect(stored).not.toContain(line);
    }
    expect(checkpoints).toBeGreaterThan(TASK_IDS.length * 4);
  }, 120_000);

  it("labels a simulated report as not a model result when printed", async () => {
    const report = await simulatedRun({ tasks: tasks.slice(0, 1) });
    const table = formatBenchmarkTable(report);
    expect(table.startsWith("SIMULATED MODEL")).toBe(true);
    expect(table).toMatch(/simulated \(SIMULATED, not a model result\)/);
    expect(report.model).toMatchObject({ simulated: true });
  });
});

describe("the simulated model", () => {
  it("is never given a task's hidden tests", () => {
    for (const script of model.scripts) expect(script.task).not.toHaveProperty("test");
  });
});

describe("outcomeFromRun", () => {
  const hidden = (passed: boolean) => ({
    passed,
    status: passed ? ("ok" as const) : ("error" as const),
    ...(passed ? {} : { errorClass: "AssertionError" }),
  });
  const record = (attempt: number, feedback: string, passed: boolean) => ({
    attempt,
    node: attempt === 1 ? "generator" : "fixer",
    feedback,
    tokens: 100 * attempt,
    code: `v${attempt}`,
    hidden: hidden(passed),
    handoverPassed: passed,
  });

  it("charges each repair's tokens to the error class it repaired", () => {
    const outcome = outcomeFromRun(
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
      [record(1, "NameError", false), record(2, "AssertionError", false), record(3, "passed", true)],
      hidden(true),
      4,
      true,
      1234.4,
    );
    expect(outcome).toMatchObject({
      solved: true,
      solvedFirstAttempt: false,
      attempts: 3,
      wallMs: 1234,
      solvedWithin: [false, false, true, true],
    });
    expect(outcome.tokensByErrorClass).toEqual({ [FIRST_ATTEMPT]: 400, NameError: 450, AssertionError: 350 });
    expect(outcome.finalErrorClass).toBeUndefined();
  });

  it("counts a run its own feedback passed as unsolved when the hidden tests reject it", () => {
    const outcome = outcomeFromRun(
      "T/1",
      {
        status: "passed",
        attempt: 1,
        reason: "ok",
        usage: emptyUsage(),
        history: [{ attempt: 1, node: "generator", codeHash: "a", outcome: "passed", tokens: 1 }],
      },
      [record(1, "passed", false)],
      hidden(false),
      2,
      true,
      10,
    );
    expect(outcome).toMatchObject({
      feedbackPassed: true,
      solved: false,
      finalErrorClass: "AssertionError",
      solvedWithin: [false, false],
    });
  });
});

describe("comparing strategies at equal tokens", () => {
  it("runs each task under each strategy with the same candidates, and draws one solved-vs-tokens curve each", async () => {
    // Both have docstring examples, so the simulated model's first answer (a mutant) fails them.
    const report = await simulatedRun({
      tasks: tasks.filter((task) => ["HumanEval/0", "HumanEval/55"].includes(task.task_id)),
      maxAttempts: 3,
      settings: { candidates: 2 },
      strategies: ["repair", "resample", "mixed"],
    });
    // The simulated model writes a mutant for a fresh prompt and the reference when it repairs one:
    // repair and mixed (one repair a round) solve both, resampling alone never does.
    expect(report.settings).toMatchObject({ candidates: 2, strategy: "repair" });
    expect(report.strategies?.strategies).toEqual(["repair", "resample", "mixed"]);
    expect(report.strategies?.perStrategy.repair?.solved).toBe(2);
    expect(report.strategies?.perStrategy.resample?.solved).toBe(0);
    expect(report.strategies?.perStrategy.mixed?.solved).toBe(2);
    const curves = report.curves.byTokens.strategies;
    expect(Object.keys(curves ?? {})).toEqual(["repair", "resample", "mixed"]);
    for (const curve of Object.values(curves ?? {})) expect(curve).toHaveLength(report.curves.byTokens.budgets.length);
    expect(curves?.repair?.at(-1)).toBe(2);
    expect(curves?.resample?.at(-1)).toBe(0);
    expect(curves?.mixed?.at(-1)).toBe(2);
    // Resampling paid for three rounds of two fresh programs a task; repair for one round and a repair.
    expect(report.perTask[0]?.strategyRuns?.resample?.attemptRecords).toHaveLength(3);
    expect(report.perTask[0]?.attemptRecords.map((record) => record.node)).toEqual(["candidate", "fixer"]);
    expect(formatBenchmarkTable(report)).toMatch(/resample, 2 candidates: solved \/ tokens per task \/ per 1k\s+0 \//);
    const html = renderHtmlReport(report);
    expect(html).toContain('"strategies":{"repair":[');
  });
});
