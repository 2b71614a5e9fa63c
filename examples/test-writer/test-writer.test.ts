import { describe, expect, it } from "vitest";
import { createAgent, createSandbox } from "../../src/index.js";
import { fence, promptText, scriptedModel } from "../../test/helpers/helpers.js";
import { type DroppedTest, testWriter } from "./index.js";

const sandbox = createSandbox({ kind: "process" });
const task = "Write clamp(x, low, high) that limits x to the range [low, high].";

describe("example: a test writer before the first execution", () => {
  it("adds written tests that catch a bug, drops the one that contradicts the task's tests, and reports it", async () => {
    const writer = scriptedModel((messages) => {
      const prompt = promptText(messages);
      expect(prompt).toContain(task);
      expect(prompt).not.toContain("def clamp"); // written from the task, never from the code
      return fence(
        [
          "assert clamp(5, 0, 10) == 5",
          "assert clamp(-3, 0, 10) == 0",
          "assert clamp(15, 0, 10) == 10",
          "assert clamp(10, 0, 10) == 9",
        ].join("\n"),
      );
    });
    const coder = scriptedModel(
      fence("def clamp(x, low, high):\n    return max(x, low)"), // forgets the upper bound
      (messages) => {
        expect(promptText(messages)).toContain("assert clamp(15, 0, 10) == 10");
        return fence("def clamp(x, low, high):\n    return min(max(x, low), high)");
      },
    );
    const agent = createAgent({ model: coder, sandbox, before: [testWriter({ model: writer })] });
    const result = await agent.invoke({ task, tests: "assert clamp(10, 0, 10) == 10\n" });

    expect(result.status).toBe("passed");
    expect(result.attempt).toBe(2);
    expect(result.history[0]).toMatchObject({ outcome: "AssertionError" });
    expect(writer.callCount).toBe(1);
    const note = result.notes.find((entry) => entry.source === "testWriter");
    expect(note?.message).toMatch(/kept 3, dropped 1/);
    expect((note?.data as { dropped: DroppedTest[] } | undefined)?.dropped).toEqual([
      { test: "assert clamp(10, 0, 10) == 9", reason: "contradicts the task's own tests" },
    ]);
    expect(result.tests).toContain("assert clamp(15, 0, 10) == 10");
    expect(result.tests).not.toContain("== 9");
    expect(result.usage.byNode.testWriter?.calls).toBe(1);
  });

  it("drops a written test that does not parse and keeps the rest", async () => {
    const writer = scriptedModel(
      fence("assert clamp(1, 0, 2) == 1\nassert clamp(3, 0, 2 == 2\nassert clamp(-1, 0, 2) == 0"),
    );
    const coder = scriptedModel(fence("def clamp(x, low, high):\n    return min(max(x, low), high)"));
    const result = await createAgent({ model: coder, sandbox, before: [testWriter({ model: writer })] }).invoke({
      task,
    });
    expect(result.status).toBe("passed");
    const data = result.notes[0]?.data as { kept: string[]; dropped: DroppedTest[] };
    expect(data.kept).toEqual(["assert clamp(1, 0, 2) == 1", "assert clamp(-1, 0, 2) == 0"]);
    expect(data.dropped).toEqual([{ test: "assert clamp(3, 0, 2 == 2", reason: "does not parse" }]);
  });
});
