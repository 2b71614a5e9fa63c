import { Command, isInterrupted, MemorySaver } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import { type ApprovalRequest, createAgent, createSandbox, parseSettings } from "../../src/index.js";
import { fence, promptText, scriptedModel } from "../helpers/helpers.js";

const sandbox = createSandbox({ kind: "process" });

describe("human approval", () => {
  it("pauses before execution, feeds a rejection to the fixer, and runs what is approved", async () => {
    const model = scriptedModel(fence("import os\nos.remove('/important')"), (messages) => {
      expect(promptText(messages)).toContain("Rejected: do not delete files");
      return fence("print('safe')");
    });
    const agent = createAgent({ model, sandbox, checkpointer: new MemorySaver() });
    const config = { configurable: { thread_id: "approval-1" }, context: parseSettings({ approval: true }) };

    const first = await agent.invoke({ task: "Clean up." }, config);
    expect(isInterrupted<ApprovalRequest>(first)).toBe(true);
    if (!isInterrupted<ApprovalRequest>(first)) return;
    expect(first.__interrupt__[0]?.value).toMatchObject({
      kind: "approval",
      attempt: 1,
      code: expect.stringContaining("os.remove"),
    });

    const second = await agent.invoke(
      new Command({ resume: { action: "reject", reason: "do not delete files" } }),
      config,
    );
    expect(isInterrupted<ApprovalRequest>(second)).toBe(true);
    if (!isInterrupted<ApprovalRequest>(second)) return;
    expect(second.__interrupt__[0]?.value).toMatchObject({ attempt: 2, code: "print('safe')\n" });

    const final = await agent.invoke(new Command({ resume: { action: "approve" } }), config);
    expect(final.status).toBe("passed");
    expect(final.attempt).toBe(2);
    expect(final.history[0]).toMatchObject({ outcome: "Rejected" });
    expect(final.errors[0]).toMatchObject({ type: "Rejected", message: "do not delete files" });
  });

  it("runs a person's edit instead of the model's program", async () => {
    const model = scriptedModel(fence("print(1/0)"));
    const agent = createAgent({ model, sandbox, checkpointer: new MemorySaver() });
    const config = { configurable: { thread_id: "approval-2" }, context: parseSettings({ approval: true }) };
    await agent.invoke({ task: "Print a half." }, config);
    const final = await agent.invoke(new Command({ resume: { action: "edit", code: "print(1/2)" } }), config);
    expect(final.status).toBe("passed");
    expect(final.lastRun?.stdout).toBe("0.5\n");
    expect(final.history[0]).toMatchObject({ node: "human" });
  });
});
