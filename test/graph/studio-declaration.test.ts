import { MemorySaver } from "@langchain/langgraph";
import { afterAll, describe, expect, it } from "vitest";
import {
  createAgent,
  createSandbox,
  InvalidSettingsError,
  planResume,
  ScriptedChatModel,
  studioDeclaration,
  ThreadHasRunError,
} from "../../src/index.js";
import { fence } from "../helpers/helpers.js";

// The agent as Studio's graph declares it (studio.ts): the same runs as createAgent's, with the
// input and settings forms the dev server reads. test/graph/studio-server.e2e.test.ts reads those forms.

const sandbox = createSandbox({ kind: "process" });
afterAll(() => sandbox.close());

function studioAgent(model: ScriptedChatModel) {
  return createAgent({ model, sandbox, checkpointer: new MemorySaver() }, studioDeclaration());
}

describe("the agent declared for Studio", () => {
  it("refuses an empty task and an unknown language before any model call", async () => {
    const model = new ScriptedChatModel([fence("print(1)")]);
    const agent = studioAgent(model);
    await expect(agent.invoke({ task: "  " }, { configurable: { thread_id: "a" } })).rejects.toThrow(
      /task must not be empty/,
    );
    await expect(
      agent.invoke({ task: "Print 1.", language: "cobol" as never }, { configurable: { thread_id: "b" } }),
    ).rejects.toThrow(/language must be one of: python, javascript/);
    expect(model.prompts).toHaveLength(0);
  });

  it("resumes a run that ended on a model error with the Command that updates its state", async () => {
    const model = new ScriptedChatModel([
      () => {
        throw new Error("the model server fell over");
      },
      fence("print('back')"),
    ]);
    const agent = studioAgent(model);
    const config = { configurable: { thread_id: "c" } };
    const failed = await agent.invoke({ task: "Print back." }, config);
    expect(failed).toMatchObject({ status: "model_error", resumeFrom: "generator" });
    const plan = planResume(await agent.getState(config), agent);
    if (!("start" in plan)) throw new Error(`the run cannot be resumed: ${plan.finished.status}`);
    const resumed = await agent.invoke(plan.start, config);
    expect(resumed).toMatchObject({ status: "passed", attempt: 1, lastRun: { stdout: "back\n" } });
  });

  it("refuses a second task on a thread that holds a run, and leaves that run as it was", async () => {
    const model = new ScriptedChatModel([fence("print('first')"), fence("raise SystemExit(3)")]);
    const agent = studioAgent(model);
    const config = { configurable: { thread_id: "e" } };
    await agent.invoke({ task: "Print first." }, config);
    const refused = await agent.invoke({ task: "Exit 3." }, config).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(ThreadHasRunError);
    expect(refused).toMatchObject({
      code: "THREAD_HAS_RUN",
      message:
        "thread e already has a run (passed, 1 attempt): give a new task a new thread, and continue this run with a resume (no input)",
    });
    // Nothing of the second task ran: one model call, and the thread still holds the first run.
    expect(model.prompts).toHaveLength(1);
    const state = await agent.getState(config);
    expect(state.values).toMatchObject({ task: "Print first.", status: "passed", attempt: 1 });
    expect(state.values.lastRun.stdout).toBe("first\n");
  });

  it("says a setting of the wrong type in one line, as parseSettings does, not as zod's JSON", async () => {
    const agent = studioAgent(new ScriptedChatModel([fence("print(1)")]));
    const refused = await agent
      .invoke({ task: "Print 1." }, { configurable: { thread_id: "f" }, context: { maxAttempts: "lots" } as never })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(InvalidSettingsError);
    expect((refused as Error).message).toBe("maxAttempts must be a number");
  });

  it("still names an unknown setting in the context", async () => {
    const agent = studioAgent(new ScriptedChatModel([fence("print(1)")]));
    await expect(
      agent.invoke({ task: "Print 1." }, { configurable: { thread_id: "d" }, context: { maxAtempts: 3 } as never }),
    ).rejects.toThrow(/unknown setting "maxAtempts" \(did you mean maxAttempts\?\)/);
  });
});
