import type { BaseMessage } from "@langchain/core/messages";
import { afterAll, describe, expect, it } from "vitest";
import { createAgent, createSandbox, type Language, parseSettings } from "../../src/index.js";
import { renderRunReport, traceRun } from "../../src/report/index.js";
import { fence, promptText, scriptedModel } from "../helpers/helpers.js";

/**
 * Issue 26: the fixer is shown the values a failed run computed. Each case below is a real bug run
 * in the real sandbox; the scripted fixer returns the fix only when its prompt holds the values
 * that locate the bug, and the buggy program again otherwise, so a pass proves the values got there.
 */
const sandbox = createSandbox({ kind: "process" });
afterAll(() => sandbox.close());

interface LocatedBug {
  name: string;
  language: Language;
  buggy: string;
  fixed: string;
  tests: string;
  /** What the fixer's prompt must hold; literal text from the run. */
  shows: Array<string | RegExp>;
}

const BUGS: LocatedBug[] = [
  {
    name: "a wrong add",
    language: "python",
    buggy: "def add(a, b):\n    return a - b\n",
    fixed: "def add(a, b):\n    return a + b\n",
    tests: "assert add(2, 3) == 5\n",
    shows: ["failed check at line 5: add(2, 3) returned -1, expected 5"],
  },
  {
    name: "an off-by-one in a loop",
    language: "python",
    buggy:
      'def count_vowels(text):\n    count = 0\n    for i in range(len(text) - 1):\n        if text[i] in "aeiou":\n            count += 1\n    return count\n',
    fixed:
      'def count_vowels(text):\n    count = 0\n    for i in range(len(text)):\n        if text[i] in "aeiou":\n            count += 1\n    return count\n',
    tests: 'for word, vowels in [("sky", 0), ("banana", 3)]:\n    assert count_vowels(word) == vowels\n',
    shows: [
      "failed check at line 10: count_vowels(word) returned 2, expected 3 (where word is 'banana')",
      "test line 10 called count_vowels('banana'), which returned 2",
    ],
  },
  {
    name: "a KeyError on a dict built in a helper",
    language: "python",
    buggy:
      "def build_index(words):\n    index = {}\n    for word in words:\n        index[word.lower()] = len(word)\n    return index\n\ndef length_of(words, word):\n    index = build_index(words)\n    return index[word]\n",
    fixed:
      "def build_index(words):\n    index = {}\n    for word in words:\n        index[word] = len(word)\n    return index\n\ndef length_of(words, word):\n    index = build_index(words)\n    return index[word]\n",
    tests: 'assert length_of(["Apple", "pear"], "pear") == 4\nassert length_of(["Apple", "pear"], "Apple") == 5\n',
    shows: [
      "in length_of, line 9: words = ['Apple', 'pear'], word = 'Apple', index = {'apple': 5, 'pear': 4}",
      "test line 13 called length_of(['Apple', 'pear'], 'Apple'), which raised",
    ],
  },
  {
    name: "a wrong value deep in a recursive call",
    language: "python",
    buggy: "def factorial(n):\n    if n == 1:\n        return 1\n    return n * factorial(n - 2)\n",
    fixed: "def factorial(n):\n    if n <= 1:\n        return 1\n    return n * factorial(n - 1)\n",
    tests: "assert factorial(4) == 24\n",
    // The innermost frames: n went past 1 and below 0 in steps of 2.
    shows: [/- in factorial, line 4: n = -\d*[02468]\n- in factorial, line 4: n = -\d*[02468]\n/],
  },
  {
    name: "a JavaScript assert.deepStrictEqual",
    language: "javascript",
    buggy: "function sortList(xs) {\n  const copy = [...xs];\n  copy.sort();\n  return copy;\n}\n",
    fixed: "function sortList(xs) {\n  const copy = [...xs];\n  copy.sort((a, b) => a - b);\n  return copy;\n}\n",
    tests:
      'const assert = require("node:assert");\nconst input = [10, 9, 1];\nassert.deepStrictEqual(sortList(input), [1, 9, 10]);\n',
    shows: [
      "failed check at line 10: sortList(input) returned [ 1, 10, 9 ], expected [ 1, 9, 10 ]",
      "input = [ 10, 9, 1 ]",
    ],
  },
  {
    name: "a JavaScript plain throw",
    language: "javascript",
    buggy:
      "function total(items) {\n  let sum = 0;\n  for (let i = 1; i < items.length; i++) sum += items[i].price;\n  return sum;\n}\n",
    fixed:
      "function total(items) {\n  let sum = 0;\n  for (let i = 0; i < items.length; i++) sum += items[i].price;\n  return sum;\n}\n",
    tests: 'const cart = [{ price: 5 }, { price: 7 }];\nif (total(cart) !== 12) throw new Error("wrong total");\n',
    shows: ["failed check at line 9: total(cart) returned 7, expected 12", "cart = [ { price: 5 }, { price: 7 } ]"],
  },
];

const holds = (prompt: string, shown: string | RegExp) =>
  typeof shown === "string" ? prompt.includes(shown) : shown.test(prompt);

describe("the fixer is shown the values that locate the bug", () => {
  for (const bug of BUGS) {
    it(`repairs ${bug.name} once the prompt holds the values`, async () => {
      const prompts: string[] = [];
      const fixer = (messages: BaseMessage[]) => {
        const prompt = promptText(messages);
        prompts.push(prompt);
        return fence(bug.shows.every((shown) => holds(prompt, shown)) ? bug.fixed : bug.buggy, bug.language);
      };
      const model = scriptedModel(fence(bug.buggy, bug.language), fixer, fixer);
      const result = await createAgent({ model, sandbox }).invoke(
        { task: `Fix ${bug.name}.`, language: bug.language, tests: bug.tests },
        { context: parseSettings({ maxAttempts: 2, traceCalls: true }) },
      );
      for (const shown of bug.shows)
        expect(prompts[0]).toEqual(
          typeof shown === "string" ? expect.stringContaining(shown) : expect.stringMatching(shown),
        );
      expect(result.status).toBe("passed");
      expect(result.attempt).toBe(2);
    });
  }

  it("does not repair them when the values are turned off, which is what the cases above rely on", async () => {
    const bug = BUGS[0]!;
    const prompts: string[] = [];
    const model = scriptedModel(fence(bug.buggy), (messages) => {
      prompts.push(promptText(messages));
      return fence(bug.shows.every((shown) => holds(prompts[0]!, shown)) ? bug.fixed : bug.buggy);
    });
    const result = await createAgent({ model, sandbox }).invoke(
      { task: "Fix add.", tests: bug.tests },
      { context: parseSettings({ maxAttempts: 2, runtimeValues: false }) },
    );
    expect(prompts[0]).toContain("AssertionError");
    expect(prompts[0]).not.toContain("returned -1");
    expect(result.lastRun?.values).toBeUndefined();
    expect(result.status).toBe("failed");
  });
});

describe("the run report shows the values per attempt", () => {
  it("renders a failed attempt's values, escaped, beside its traceback", async () => {
    const bug = BUGS[0]!;
    const failed = await createAgent({ model: scriptedModel(fence(bug.buggy)), sandbox }).invoke(
      { task: "Write add(a, b).", tests: bug.tests },
      { context: parseSettings({ maxAttempts: 1, traceCalls: true }) },
    );
    expect(failed.status).toBe("failed");
    const html = renderRunReport(
      traceRun([
        { values: { task: "t", history: [] } },
        { node: "critic", values: { ...failed, history: failed.history } },
      ]),
    );
    expect(html).toContain("<h4>Values at the failure</h4>");
    expect(html).toContain("failed check at line 5: add(2, 3) returned -1, expected 5");
    expect(html).toContain("test line 5 called add(2, 3), which returned -1");
  });
});

describe("the call trace", () => {
  it("lists the calls the failing check made, not those of the loop's earlier, passing rounds", async () => {
    const bug = BUGS[1]!;
    const failed = await createAgent({ model: scriptedModel(fence(bug.buggy)), sandbox }).invoke(
      { task: "Count vowels.", tests: bug.tests },
      { context: parseSettings({ maxAttempts: 1, traceCalls: true }) },
    );
    expect(failed.lastRun?.values?.calls).toEqual([
      { function: "count_vowels", line: 10, args: "'banana'", returned: "2" },
    ]);
  });

  it("lists the call still running when the program raised", async () => {
    const bug = BUGS[2]!;
    const failed = await createAgent({ model: scriptedModel(fence(bug.buggy)), sandbox }).invoke(
      { task: "Look up lengths.", tests: bug.tests },
      { context: parseSettings({ maxAttempts: 1, traceCalls: true }) },
    );
    expect(failed.lastRun?.values?.calls).toEqual([
      { function: "length_of", line: 13, args: "['Apple', 'pear'], 'Apple'" },
    ]);
  });

  it("is left out by default, the rest of the values kept", async () => {
    const bug = BUGS[1]!;
    const failed = await createAgent({ model: scriptedModel(fence(bug.buggy)), sandbox }).invoke(
      { task: "Count vowels.", tests: bug.tests },
      { context: parseSettings({ maxAttempts: 1 }) },
    );
    expect(failed.lastRun?.values?.calls).toBeUndefined();
    expect(failed.lastRun?.values?.assertion?.line).toBe(10);
  });
});
