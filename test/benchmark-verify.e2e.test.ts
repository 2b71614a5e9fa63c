import { afterAll, describe, expect, it } from "vitest";
import { type BenchmarkTask, formatVerifyReport, loadDataset, verifyDataset } from "../src/benchmark/index.js";
import { findEffectiveMutants } from "../src/benchmark/mutants.js";
import { createSandbox } from "../src/sandbox/index.js";

// The real sandbox, pre-warmed, as `selfheal bench --verify-dataset` uses it.
const sandbox = createSandbox({ prewarm: ["python"] });
afterAll(() => sandbox.close());

const tinyTask = (overrides: Partial<BenchmarkTask>): BenchmarkTask => ({
  task_id: "Tiny/0",
  prompt: 'def is_big(x):\n    """True when x is over 10."""\n',
  canonical_solution: "    return x > 10\n",
  test: "def check(candidate):\n    assert candidate(11) is True\n    assert candidate(10) is False\n    assert candidate(3) is False\n",
  entry_point: "is_big",
  ...overrides,
});

describe("dataset verify on small tasks", () => {
  it("keeps only mutants that change behaviour on the tests' own calls", async () => {
    const found = await findEffectiveMutants(tinyTask({}), sandbox);
    expect(found.effective.length).toBeGreaterThan(0);
    // candidate(10) tells `x > 10` from `x >= 10`.
    expect(found.effective.map((mutant) => mutant.description)).toContain('line 1: ">" -> ">="');
  });

  it("discards a mutant the hidden tests cannot observe", async () => {
    // The tests never call near the boundary, so `>` -> `>=` is equivalent on them.
    const found = await findEffectiveMutants(
      tinyTask({ test: "def check(candidate):\n    assert candidate(50) is True\n    assert candidate(1) is False\n" }),
      sandbox,
    );
    expect(found.effective.map((mutant) => mutant.description)).not.toContain('line 1: ">" -> ">="');
    expect(found.equivalent).toBeGreaterThan(0);
  });

  it("reports a false pass when the tests accept a program that behaves differently", async () => {
    // The tests call the function but assert nothing about its answer: a judge that cannot fail.
    const report = await verifyDataset({
      tasks: [tinyTask({ test: "def check(candidate):\n    candidate(11)\n    candidate(3)\n" })],
      sandbox,
    });
    expect(report.falseFails).toEqual([]);
    expect(report.falsePasses.length).toBeGreaterThan(0);
    expect(report.falsePasses[0]?.detail).toMatch(/returned .*reference/);
  });

  it("reports a false fail when the reference solution does not pass", async () => {
    const report = await verifyDataset({ tasks: [tinyTask({ canonical_solution: "    return x >= 10\n" })], sandbox });
    expect(report.falseFails).toEqual([expect.objectContaining({ taskId: "Tiny/0", status: "error" })]);
  });
});

describe("dataset verify on all of HumanEval", () => {
  it("passes every reference solution and fails every effective mutant", async () => {
    const tasks = await loadDataset();
    const report = await verifyDataset({ tasks, sandbox, concurrency: 2 });
    // Printed so CI logs carry the figures; the assertions below are the contract.
    console.log(formatVerifyReport(report));
    expect(report.tasks).toBe(164);
    expect(report.falseFails).toEqual([]);
    expect(report.falsePasses).toEqual([]);
    expect(report.tasksWithoutMutants.length).toBeLessThanOrEqual(3);
    expect(report.mutantsJudged).toBeGreaterThanOrEqual(2 * 164);
  }, 300_000); // Generous: CI machines vary; the 60 s target is a benchmark figure, not a timed test.
});
