import { afterAll, describe, expect, it } from "vitest";
import { type BenchmarkTask, formatVerifyReport, loadDataset, verifyDataset } from "../../src/benchmark/index.js";
import { findEffectiveMutants, selectMutants } from "../../src/benchmark/mutants.js";
import { createSandbox } from "../../src/sandbox/index.js";

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

  it("stops running a candidate once the candidates before it hold the mutants kept", async () => {
    // candidate(10) tells `>` from `>=` at once; `10 -> 11` still agrees there and differs only at
    // candidate(11), by when the one mutant kept (a value difference) is already known.
    const test =
      "def check(candidate):\n    assert candidate(10) is False\n    assert candidate(11) is True\n    assert candidate(3) is False\n";
    const keepOne = await findEffectiveMutants(tinyTask({ test }), sandbox, { maxMutants: 1 });
    expect(keepOne).toMatchObject({ tried: 2, invalid: 0, equivalent: 0, unneeded: 1 });
    expect(keepOne.effective.map((mutant) => mutant.description)).toEqual(['line 1: ">" -> ">="']);
    const keepThree = await findEffectiveMutants(tinyTask({ test }), sandbox, { maxMutants: 3 });
    expect(keepThree).toMatchObject({ tried: 2, invalid: 0, equivalent: 0, unneeded: 0 });
    expect(keepThree.effective.map((mutant) => mutant.description)).toEqual([
      'line 1: ">" -> ">="',
      "line 1: 10 -> 11",
    ]);
  });

  it("keeps the mutants a probe run to the last call keeps, on a sample of HumanEval", async () => {
    const tasks = await loadDataset({
      taskIds: ["HumanEval/0", "HumanEval/12", "HumanEval/26", "HumanEval/59", "HumanEval/129"],
    });
    let unneeded = 0;
    for (const task of tasks) {
      const kept = await findEffectiveMutants(task, sandbox);
      // Keeping as many as there are candidates, the probe never stops a candidate early.
      const full = await findEffectiveMutants(task, sandbox, { maxMutants: 16 });
      expect(full.unneeded).toBe(0);
      expect(kept.effective.map((mutant) => mutant.id)).toEqual(selectMutants(full.effective, 3).map((m) => m.id));
      expect(kept.effective).toHaveLength(3);
      unneeded += kept.unneeded;
    }
    // Measured: 4, 5, 1, 11 and 9 candidates not run to the end.
    expect(unneeded).toBe(30);
  }, 120_000);

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

describe("dataset verify on HumanEval+ and MBPP+", () => {
  it("passes the references and catches every effective mutant on a sample of each, the fixed checks of HumanEval+/32 and Mbpp/737 included", async () => {
    const tasks = [
      ...(await loadDataset({ dataset: "humanevalplus", taskIds: ["HumanEval/0", "HumanEval/32", "HumanEval/47"] })),
      // Mbpp/2 compares as sets; Mbpp/56 names its own function `check`; Mbpp/98's example uses math;
      // Mbpp/737's published helper asserted nothing until its declared fix.
      ...(await loadDataset({ dataset: "mbppplus", taskIds: ["Mbpp/2", "Mbpp/56", "Mbpp/98", "Mbpp/737"] })),
    ];
    const report = await verifyDataset({ tasks, sandbox, concurrency: 2 });
    expect(report.falseFails).toEqual([]);
    expect(report.visibleFalseFails).toEqual([]);
    expect(report.visibleChecked).toBe(7);
    expect(report.falsePasses).toEqual([]);
    expect(report.tasksWithoutMutants).toEqual([]);
  }, 300_000);
});

describe("dataset verify on all of HumanEval", () => {
  it("passes every reference solution and fails every effective mutant", async () => {
    const tasks = await loadDataset();
    const report = await verifyDataset({ tasks, sandbox, concurrency: 2 });
    // Printed so CI logs carry the figures; the assertions below are the contract.
    console.log(formatVerifyReport(report));
    expect(report.tasks).toBe(164);
    expect(report.canonicalPassed).toBe(164);
    expect(report.falseFails).toEqual([]);
    expect(report.falsePasses).toEqual([]);
    // The docstring examples fed back as visible tests never fail a reference solution.
    expect(report.visibleChecked).toBe(70);
    expect(report.visibleFalseFails).toEqual([]);
    // The verdicts as they stood before the judge ran in batches (measured on main at 7ac99b2, the
    // same on every run): every one of 470 effective mutants caught, by operator.
    expect(report.mutantsJudged).toBe(470);
    expect(report.mutantsCaught).toBe(470);
    expect(report.mutantsPerTaskHistogram).toEqual([0, 6, 10, 148]);
    // Which operator a task's kept mutants come from rests on the probe's per-call time limit (a
    // slow mutant there "differs by timeout" and may be kept before another): at 7ac99b2, a quiet
    // machine's split was comparison 96, negated-condition 111, range-bound 21, arithmetic 84,
    // membership 11, boolean-operator 11, return-constant 24, index 10, length 11, constant 45,
    // swapped-builtin 10, sort-order 8, string-constant 9, dropped-call 19; a loaded CI machine
    // (e3769c8) kept one sort-order mutant in a constant one's place. Each operator's are all caught.
    const operators = Object.values(report.byOperator);
    expect(operators.reduce((sum, { judged }) => sum + judged, 0)).toBe(470);
    for (const [operator, { judged, caught }] of Object.entries(report.byOperator)) {
      expect({ operator, caught }).toEqual({ operator, caught: judged });
    }
    // Text work and compiling, so fixed; how many of the rest the probe calls equivalent rests on
    // per-call time limits, and is left out.
    expect(report.candidates).toMatchObject({ generated: 2419, tried: 1789, invalid: 5 });
    // Generous: CI machines vary; the time target is a benchmark figure (npm run bench:judge), not a timed test.
  }, 300_000);
});
