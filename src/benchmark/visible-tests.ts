import type { BenchmarkTask } from "./dataset.js";

/**
 * The visible tests: the examples a user would have, taken from the task's own prompt. They may
 * reach the fixer; the dataset's hidden tests never do.
 *
 * Two forms are read, the two that are code rather than prose:
 * - doctest examples, `>>> call` followed by the expected value on the next line(s) (HumanEval);
 * - `assert` statements in the prompt (MBPP+, whose docstring gives the first test as `Example:`).
 * Prose examples (`f(x) ➞ y`, `f(x) should return y`) are left to the model's own self-checks:
 * they are too loose to parse (placeholders, typos, wrong types), and a wrong example would fail a
 * correct program.
 */
export type VisibleExample =
  | { kind: "call"; call: string; expected: string }
  /** An `assert` line, or a doctest line that shows no value (a setup step such as `x = 5`). */
  | { kind: "statement"; statement: string };

const DOCTEST_PROMPT = /^>>>\s?(.*)$/;
const DOCTEST_CONTINUATION = /^\.\.\.\s?(.*)$/;

/**
 * Docstring examples that contradict the task's own reference solution and hidden tests. Fed back,
 * they would fail a correct program, so they are left out (the dataset verify finds such cases:
 * it runs each reference solution against its visible tests). Keyed by id and entry point, so a
 * user dataset reusing an id is unaffected.
 */
export const KNOWN_WRONG_EXAMPLES: Record<string, { entryPoint: string; call: string; why: string }> = {
  "HumanEval/47": {
    entryPoint: "median",
    call: "median([-10, 4, 6, 1000, 10, 20])",
    why: "the docstring shows 15.0; the median of that list, by the reference and the hidden tests, is 8.0",
  },
};

/**
 * The examples in `prompt`, in order. Pure text work: nothing runs here. An `assert` line counts
 * only when it calls `entryPoint`: HumanEval/149's prose uses `assert list_sort(...) => [...]`,
 * neither Python nor its function.
 */
export function extractVisibleExamples(prompt: string, entryPoint: string): VisibleExample[] {
  const lines = prompt.split("\n").map((line) => line.trim());
  const callsEntry = new RegExp(`\\b${entryPoint.replace(/[^\w]/g, "\\$&")}\\s*\\(`);
  const examples: VisibleExample[] = [];
  for (let index = 0; index < lines.length; index += 1) {
    const line = lines[index]!;
    const doctest = DOCTEST_PROMPT.exec(line);
    if (doctest) {
      const source = [doctest[1]!];
      while (DOCTEST_CONTINUATION.test(lines[index + 1] ?? ""))
        source.push(DOCTEST_CONTINUATION.exec(lines[++index]!)![1]!);
      const expected: string[] = [];
      while (index + 1 < lines.length) {
        const next = lines[index + 1]!;
        if (next === "" || DOCTEST_PROMPT.test(next) || next.startsWith('"""') || next.startsWith("'''")) break;
        expected.push(next.replace(/("""|''')$/, "").trimEnd());
        index += 1;
        if (/("""|''')$/.test(next)) break;
      }
      const call = source.join("\n").trim();
      if (call === "") continue;
      examples.push(
        expected.length > 0
          ? { kind: "call", call, expected: expected.join("\n") }
          : { kind: "statement", statement: call },
      );
      continue;
    }
    if (/^assert\s/.test(line) && callsEntry.test(line)) examples.push({ kind: "statement", statement: line });
  }
  // Setup lines alone check nothing.
  const checks = examples.filter((example) => example.kind === "call" || example.statement.startsWith("assert"));
  return checks.length === 0 ? [] : examples;
}

// Each example is checked in a copy of the program's globals where the entry point's name is bound
// to the function under test, so the example's text runs as written (`set(f(x)) == ...`) and the
// behaviour probe can put its recorder in that place.
// MBPP's examples may use `math` (its test_imports), given to the examples only, never to the program.
const EXAMPLE_HELPERS = String.raw`
import math as _selfheal_math


def _selfheal_same(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or _selfheal_math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) == type(b) and len(a) == len(b) and all(_selfheal_same(x, y) for x, y in zip(a, b))
    try:
        return bool(a == b)
    except Exception:
        return False


class _SelfhealScope(dict):
    """The examples' names over the tests' globals, read through (a judge's globals resolve the program's names)."""

    def __init__(self, outer):
        super().__init__()
        self.outer = outer

    def __missing__(self, name):
        return self.outer[name]

    def __repr__(self):
        # Shown among a failure's runtime values: eval puts all of builtins in it.
        return "<the examples' names>"


def _selfheal_example(namespace, call, expected):
    actual = eval(call, namespace)
    try:
        wanted = eval(expected, namespace)
    except Exception:
        # Shown output that is not a Python value: compare it as doctest would, as text.
        if repr(actual) == expected or str(actual) == expected:
            return
        raise AssertionError("example %s returned %r, the task's docstring shows %s" % (call, actual, expected)) from None
    if not _selfheal_same(actual, wanted):
        raise AssertionError("example %s returned %r, the task's docstring shows %s" % (call, actual, expected))


def _selfheal_statement(namespace, statement):
    try:
        exec(statement, namespace)
    except AssertionError:
        raise AssertionError("the task's example failed: %s" % statement) from None
`;

const pythonString = (text: string): string => JSON.stringify(text);

/**
 * The examples as a Python check function named `name` that takes the function under test.
 * Null when the prompt has no example: the run's feedback is then the program's own self-checks.
 */
export function buildExampleCheck(task: BenchmarkTask, name: string): string | null {
  const wrong = KNOWN_WRONG_EXAMPLES[task.task_id];
  const examples = extractVisibleExamples(task.prompt, task.entry_point).filter(
    (example) => !(wrong?.entryPoint === task.entry_point && example.kind === "call" && example.call === wrong.call),
  );
  if (!examples.some((example) => example.kind === "call" || example.statement.startsWith("assert"))) return null;
  const body = examples.map((example) =>
    example.kind === "call"
      ? `    _selfheal_example(namespace, ${pythonString(example.call)}, ${pythonString(example.expected)})`
      : `    _selfheal_statement(namespace, ${pythonString(example.statement)})`,
  );
  return [
    EXAMPLE_HELPERS,
    "",
    `def ${name}(candidate):`,
    "    namespace = _SelfhealScope(globals())",
    '    namespace.setdefault("math", _selfheal_math)',
    `    namespace[${pythonString(task.entry_point)}] = candidate`,
    ...body,
    "",
  ].join("\n");
}

/** Not `check`: an MBPP task may name its own function `check` (Mbpp/56). */
const VISIBLE_CHECK_NAME = "_selfheal_check_examples";

/** The visible tests as a run's `tests`, appended after the program; null when the prompt has no example. */
export function buildVisibleTests(task: BenchmarkTask): string | null {
  const check = buildExampleCheck(task, VISIBLE_CHECK_NAME);
  return check === null ? null : `${check}\n${VISIBLE_CHECK_NAME}(${task.entry_point})\n`;
}

/**
 * The task as the model and its feedback see it: its `test` replaced by the visible examples,
 * shaped as HumanEval's `check(candidate)`. Mutants found against it are found without the hidden
 * tests (the simulated model uses this). Null when there is no example.
 */
export function withVisibleTestsOnly(task: BenchmarkTask): BenchmarkTask | null {
  const check = buildExampleCheck(task, "check");
  return check === null ? null : { ...task, test: check };
}
