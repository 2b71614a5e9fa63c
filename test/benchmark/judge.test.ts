import { afterAll, describe, expect, it } from "vitest";
import { type BenchmarkTask, judgeCompletion, verifyDataset } from "../../src/benchmark/index.js";
import { createSandbox } from "../../src/sandbox/index.js";

const sandbox = createSandbox({ kind: "process" });
afterAll(() => sandbox.close());

const task = (canonical_solution: string): BenchmarkTask => ({
  task_id: "Exit/0",
  prompt: "import os\nimport sys\n\ndef add(a, b):\n",
  canonical_solution,
  test: "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(0, 0) == 0\n",
  entry_point: "add",
});

/** Wrong answers that end the process before `check` runs: HumanEval's harness fails every one. */
const EXITING_SOLUTIONS = {
  "sys.exit(0)": "    return a - b\nsys.exit(0)\n",
  "os._exit(0)": "    return a - b\nos._exit(0)\n",
  "raise SystemExit": "    return a - b\nraise SystemExit\n",
  "raise SystemExit(0) with the right answer": "    return a + b\nraise SystemExit(0)\n",
  "exit() after printing ok": "    return a - b\nprint('ok')\nexit()\n",
};

describe("the benchmark's judge follows HumanEval's rule: any SystemExit fails", () => {
  for (const [name, solution] of Object.entries(EXITING_SOLUTIONS)) {
    it(`fails a completion that ends the process: ${name}`, async () => {
      const verdict = await judgeCompletion(sandbox, task(solution), solution, 10_000);
      expect(verdict).toMatchObject({ passed: false, status: "ok", errorClass: "TestsNotFinished" });
      expect(verdict.error).toMatch(/before the acceptance tests finished/);
    });
  }

  it("passes the right answer that lets the tests run", async () => {
    const verdict = await judgeCompletion(sandbox, task("    return a + b\n"), "    return a + b\n", 10_000);
    expect(verdict).toMatchObject({ passed: true, status: "ok" });
  });

  it("still fails a wrong answer by its assertion", async () => {
    const verdict = await judgeCompletion(sandbox, task("    return a - b\n"), "    return a - b\n", 10_000);
    expect(verdict).toMatchObject({ passed: false, errorClass: "AssertionError" });
  });

  it("--verify-dataset reports a reference solution that exits as failing", async () => {
    const report = await verifyDataset({ tasks: [task("    return a + b\nsys.exit(0)\n")], sandbox });
    expect(report.canonicalPassed).toBe(0);
    expect(report.falseFails).toEqual([
      expect.objectContaining({ taskId: "Exit/0", status: "ok", error: expect.stringMatching(/TestsNotFinished/) }),
    ]);
  });
});
