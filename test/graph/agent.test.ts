import type { BaseMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import {
  createAgent,
  createSandbox,
  LIVE_LINE_CHARS,
  LIVE_TAIL_LINES,
  parseSettings,
  ScriptedChatModel,
} from "../../src/internal.js";
import { countMessageTokens } from "../../src/tools/tokens.js";
import { fence, promptText, scriptedModel } from "../helpers/helpers.js";

const sandbox = createSandbox({ kind: "process" });

describe("the self-correcting loop", () => {
  it("passes on the first try", async () => {
    const model = scriptedModel(fence("def add(a, b):\n    return a + b\n\nassert add(2, 3) == 5\nprint('ok')"));
    const result = await createAgent({ model, sandbox }).invoke({ task: "Write add(a, b)." });
    expect(result.status).toBe("passed");
    expect(result.attempt).toBe(1);
    expect(result.lastRun?.stdout).toBe("ok\n");
    expect(result.history).toEqual([expect.objectContaining({ attempt: 1, node: "generator", outcome: "passed" })]);
    expect(result.best).toMatchObject({ attempt: 1, score: 100 });
    expect(model.callCount).toBe(1);
  });

  it("fails, then is fixed at attempt 2 from the real traceback", async () => {
    const model = scriptedModel(fence("data = {'a': 1}\nprint(data['x'])"), (messages) => {
      const prompt = promptText(messages);
      expect(prompt).toContain("KeyError: 'x'");
      expect(prompt).toMatch(/File "main\.py", line 2/);
      return fence("data = {'a': 1}\nprint(data.get('x', 0))");
    });
    const result = await createAgent({ model, sandbox }).invoke({ task: "Print the value of x, or 0." });
    expect(result.status).toBe("passed");
    expect(result.attempt).toBe(2);
    expect(result.errors).toEqual([
      expect.objectContaining({ type: "KeyError", message: "'x'", count: 1, firstAttempt: 1 }),
    ]);
    expect(result.history.map((entry) => entry.node)).toEqual(["generator", "fixer"]);
    expect(result.lastRun?.stdout).toBe("0\n");
  });

  it("fails on a failing acceptance test, then passes after the fix", async () => {
    const tests = "assert is_even(4)\nassert not is_even(7)\n";
    const model = scriptedModel(fence("def is_even(n):\n    return n % 2 == 1"), (messages) => {
      expect(promptText(messages)).toContain("AssertionError");
      return fence("def is_even(n):\n    return n % 2 == 0");
    });
    const result = await createAgent({ model, sandbox }).invoke({ task: "Write is_even(n).", tests });
    expect(result.status).toBe("passed");
    expect(result.attempt).toBe(2);
    expect(result.history[0]).toMatchObject({ outcome: "AssertionError" });
    expect(result.critique?.summary).toMatch(/acceptance tests passed/);
  });

  it("keeps the last lines the program streamed, each cut short, in the attempt's execution result", async () => {
    const model = scriptedModel(
      fence(`import sys\nfor i in range(100):\n    print(f"line {i}")\nprint("e" * 5000, file=sys.stderr)`),
    );
    const result = await createAgent({ model, sandbox }).invoke({ task: "Print 100 lines." });
    const tail = result.lastRun?.liveTail ?? [];
    expect(tail).toHaveLength(LIVE_TAIL_LINES);
    // Two pipes: which of the last two lines comes first is up to the scheduler.
    const printed = tail.filter((line) => line.stream === "stdout").map((line) => line.line);
    expect(printed.at(-1)).toBe("line 99");
    expect(printed.length).toBeGreaterThanOrEqual(LIVE_TAIL_LINES - 1);
    expect(tail.filter((line) => line.stream === "stderr")).toEqual([
      { stream: "stderr", line: "e".repeat(LIVE_LINE_CHARS) },
    ]);
  });

  it("gives one fresh rewrite when the same error repeats, then stops as stuck", async () => {
    const broken = (line: string) => fence(`${line}\nprint(undefined_name)`);
    const prompts: string[] = [];
    const model = scriptedModel(
      broken("x = 1"),
      broken("x = 2\ny = 3"),
      (messages) => {
        prompts.push(promptText(messages));
        return broken("z = 0\n\n\n");
      },
      broken("w = 5"),
    );
    const result = await createAgent({ model, sandbox }).invoke(
      { task: "Print something." },
      { context: parseSettings({ maxAttempts: 10 }) },
    );
    expect(result.status).toBe("stuck");
    expect(result.history.map((entry) => entry.node)).toEqual(["generator", "fixer", "generator"]);
    expect(prompts[0]).toMatch(/different approach/);
    expect(prompts[0]).toContain("NameError: name 'undefined_name' is not defined (seen 2x)");
    expect(result.errors).toHaveLength(1);
    expect(result.errors[0]?.count).toBe(3);
    expect(result.reason).toMatch(/even after a fresh rewrite/);
  });

  it("respects maxAttempts and still returns the best code", async () => {
    const tests = "assert double(1) == 2\nassert double(2) == 4\nassert double(-3) == -6\n";
    const model = scriptedModel(
      fence("raise ValueError('one')\ndef double(x):\n    return x * 2"),
      fence("def double(x):\n    return abs(x) * 2"), // passes two tests, fails the third
      fence("def double(x):\n    return x * 2\nraise KeyError('three')"),
    );
    const result = await createAgent({ model, sandbox }).invoke(
      { task: "Write double(x).", tests },
      { context: parseSettings({ maxAttempts: 3 }) },
    );
    expect(result.status).toBe("failed");
    expect(result.attempt).toBe(3);
    expect(model.callCount).toBe(3);
    expect(result.errors.map((error) => error.type)).toEqual(["ValueError", "AssertionError", "KeyError"]);
    expect(result.best).toMatchObject({ attempt: 2, code: expect.stringContaining("abs(x) * 2") });
  });

  it("stops before a call that would exceed the token budget", async () => {
    const longFailure = fence(
      `# ${"padding ".repeat(60)}\nraise RuntimeError('again and again ' + str(__import__('random').random()))`,
    );
    const model = scriptedModel(longFailure, longFailure, longFailure, longFailure, longFailure, longFailure);
    const tokenBudget = 1400;
    const result = await createAgent({ model, sandbox }).invoke(
      { task: "Do it." },
      { context: parseSettings({ tokenBudget, maxAttempts: 20, repeatLimit: 20, maxOutputTokens: 300 }) },
    );
    expect(result.status).toBe("budget_exhausted");
    expect(result.usage.totalTokens).toBeLessThanOrEqual(tokenBudget);
    expect(result.usage.calls).toBeGreaterThanOrEqual(1);
    expect(result.reason).toMatch(/Token budget/);
  });

  it("treats a reply with no code as a failed attempt and tells the fixer why", async () => {
    const model = scriptedModel("I'm sorry, I can't write code for this task without more details.", (messages) => {
      expect(promptText(messages)).toMatch(/contained no python code/);
      return fence("print('here it is')");
    });
    const result = await createAgent({ model, sandbox }).invoke({ task: "Print a line." });
    expect(result.status).toBe("passed");
    expect(result.attempt).toBe(2);
    expect(result.history[0]).toMatchObject({ outcome: "NoCodeError" });
  });

  it("tells the fixer a python reply to a javascript task is in the wrong language, then passes on a javascript reply", async () => {
    const model = new ScriptedChatModel([
      fence("print('hello')", "python"),
      fence("console.log('hello');", "javascript"),
    ]);
    const result = await createAgent({ model, sandbox }).invoke({ task: "Print hello.", language: "javascript" });
    expect(result.status).toBe("passed");
    expect(result.attempt).toBe(2);
    expect(result.history.map((entry) => [entry.node, entry.outcome])).toEqual([
      ["generator", "NoCodeError"],
      ["fixer", "passed"],
    ]);
    expect(promptText(model.prompts[1]!)).toContain("The reply has a python block but the task is javascript");
    expect(result.lastRun?.stdout).toBe("hello\n");
  });

  it("handles every malformed reply shape without crashing", async () => {
    const replies = [
      "```python\nprint('unterminated fence')", // runs to the end
      "print('bare code')", // no fence at all
      "```\nprint('untagged')\n```",
      "```bash\necho no\n```\n```py\nprint('py tag')\n```",
      "",
    ];
    for (const reply of replies) {
      const result = await createAgent({ model: scriptedModel(reply, fence("print('fallback')")), sandbox }).invoke(
        { task: "Print." },
        { context: parseSettings({ maxAttempts: 2 }) },
      );
      expect(result.status).toBe("passed");
    }
  });

  it("keeps the fixer's prompt flat across attempts", async () => {
    const fixerPrompts: BaseMessage[][] = [];
    let attempt = 0;
    // A program of a realistic size: the prompt carries it whole at every attempt.
    const body = Array.from(
      { length: 25 },
      (_, i) => `def step_${i}(values):\n    return [v + ${i} for v in values]`,
    ).join("\n\n");
    const failing = () => {
      attempt += 1;
      return fence(`${body}\n\nprint('attempt ${attempt}')\nraise ValueError('wrong answer ${attempt}: expected 42')`);
    };
    const fixer = (messages: BaseMessage[]) => {
      fixerPrompts.push(messages);
      return failing();
    };
    const model = scriptedModel(failing, fixer, fixer, fixer, fixer);
    const result = await createAgent({ model, sandbox }).invoke(
      { task: "Compute the answer." },
      { context: parseSettings({ maxAttempts: 5 }) },
    );
    expect(result.status).toBe("failed");
    // The fixer writes attempts 2 to 5: the first prompt is attempt 2's, the last attempt 5's.
    const tokens = await Promise.all(fixerPrompts.map((messages) => countMessageTokens(messages)));
    expect(tokens).toHaveLength(4);
    expect(tokens[3]!).toBeLessThanOrEqual(tokens[0]! * 1.2);
    expect(promptText(fixerPrompts[3]!)).toContain("ValueError: wrong answer 2: expected 42 (seen 1x)");
  });

  it("fixes a JavaScript program from its stack trace", async () => {
    const model = scriptedModel(fence("const user = undefined;\nconsole.log(user.name);", "javascript"), (messages) => {
      expect(promptText(messages)).toMatch(/TypeError: Cannot read properties of undefined/);
      return fence("const user = { name: 'Ada' };\nconsole.log(user.name);", "javascript");
    });
    const result = await createAgent({ model, sandbox }).invoke({
      task: "Print the user's name.",
      language: "javascript",
    });
    expect(result.status).toBe("passed");
    expect(result.attempt).toBe(2);
    expect(result.errors[0]).toMatchObject({ type: "TypeError" });
    expect(result.lastRun?.stdout).toBe("Ada\n");
  });

  it("streams the program's output lines as custom events while it runs", async () => {
    const model = scriptedModel(fence("print('first')\nprint('second')"));
    const events: unknown[] = [];
    const stream = await createAgent({ model, sandbox }).stream({ task: "Print two lines." }, { streamMode: "custom" });
    for await (const chunk of stream) events.push(chunk);
    expect(events).toEqual([
      { kind: "output", attempt: 1, stream: "stdout", line: "first" },
      { kind: "output", attempt: 1, stream: "stdout", line: "second" },
    ]);
  });
});

describe("the fixer's compact context", () => {
  it("does not send task lines twice when the program repeats them", async () => {
    const { taskWithoutRepeats } = await import("../../src/nodes/fixer.prompt.js");
    const task =
      'Complete the function below.\n\ndef add(a, b):\n    """Return the sum of a and b.\n    >>> add(1, 2)\n    3\n    """\n';
    const code =
      'def add(a, b):\n    """Return the sum of a and b.\n    >>> add(1, 2)\n    3\n    """\n    return a - b\n';
    expect(taskWithoutRepeats(task, code)).toBe(
      "Complete the function below.\n\n[5 lines of the task are repeated verbatim in the current program below]\n",
    );
    expect(taskWithoutRepeats("Write a function.\nIt adds.\nThat is all.", "print(1)")).toBe(
      "Write a function.\nIt adds.\nThat is all.",
    );
  });
});
