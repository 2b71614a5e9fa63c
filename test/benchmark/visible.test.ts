import { afterAll, describe, expect, it } from "vitest";
import { type BenchmarkTask, loadDataset } from "../../src/benchmark/dataset.js";
import { judgeProgram } from "../../src/benchmark/verify.js";
import { buildVisibleTests, extractVisibleExamples } from "../../src/benchmark/visible-tests.js";
import { createSandbox } from "../../src/sandbox/index.js";

const sandbox = createSandbox({ prewarm: ["python"] });
afterAll(() => sandbox.close());

const task = (prompt: string, entry_point = "f"): BenchmarkTask => ({
  task_id: "T/1",
  prompt,
  canonical_solution: "    return 0\n",
  test: "def check(candidate):\n    pass\n",
  entry_point,
});

describe("visible tests from the prompt", () => {
  it("reads doctest examples with their shown value, continuation lines and setup steps", () => {
    const prompt =
      'def f(x):\n    """Doc.\n    >>> y = 2\n    >>> f(\n    ... y)\n    [1,\n     2]\n    >>> f(3)\n    4\n    """\n';
    expect(extractVisibleExamples(prompt, "f")).toEqual([
      { kind: "statement", statement: "y = 2" },
      { kind: "call", call: "f(\ny)", expected: "[1,\n2]" },
      { kind: "call", call: "f(3)", expected: "4" },
    ]);
  });

  it("reads assert examples only when they call the task's function", () => {
    const prompt = 'def g(x):\n    """Example:\n    assert g (1) == 2\n    assert other(1) => 2\n    """\n';
    expect(extractVisibleExamples(prompt, "g")).toEqual([{ kind: "statement", statement: "assert g (1) == 2" }]);
  });

  it("gives no visible tests for a prompt whose examples are prose", async () => {
    const [happy] = await loadDataset({ taskIds: ["HumanEval/80"] });
    expect(buildVisibleTests(happy!)).toBeNull();
  });

  it("fails a wrong program with the example and both values, and passes a right one", async () => {
    const square = task('def f(x):\n    """Square.\n    >>> f(3)\n    9\n    >>> f(0.5)\n    0.25\n    """\n');
    const tests = buildVisibleTests(square)!;
    const wrong = await judgeProgram(sandbox, "def f(x):\n    return x * 2\n", tests, 10_000);
    expect(wrong).toMatchObject({ passed: false, errorClass: "AssertionError" });
    expect(wrong.error).toMatch(/example f\(3\) returned 6, the task's docstring shows 9/);
    expect((await judgeProgram(sandbox, "def f(x):\n    return x ** 2\n", tests, 10_000)).passed).toBe(true);
  });

  it("compares shown output that is not a Python value as text, as doctest would", async () => {
    const shown = task('def f():\n    """\n    >>> f()\n    <thing>\n    """\n');
    const program = "class T:\n    def __repr__(self):\n        return '<thing>'\n\ndef f():\n    return T()\n";
    expect((await judgeProgram(sandbox, program, buildVisibleTests(shown)!, 10_000)).passed).toBe(true);
  });

  it("leaves out HumanEval/47's wrong docstring example, which its reference solution fails", async () => {
    const [median] = await loadDataset({ taskIds: ["HumanEval/47"] });
    const tests = buildVisibleTests(median!)!;
    expect(tests).not.toContain("1000");
    expect((await judgeProgram(sandbox, median!.prompt + median!.canonical_solution, tests, 10_000)).passed).toBe(true);
  });

  it("keeps MBPP's example working when it uses math without the program importing it", async () => {
    const [mbpp] = await loadDataset({ dataset: "mbppplus", taskIds: ["Mbpp/98"] });
    const verdict = await judgeProgram(
      sandbox,
      mbpp!.prompt + mbpp!.canonical_solution,
      buildVisibleTests(mbpp!)!,
      10_000,
    );
    expect(verdict).toMatchObject({ passed: true });
  });
});
