import { END, START, StateGraph } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import {
  AFTER_CRITIC_TARGETS,
  createAgent,
  createCriticNode,
  createExecutorNode,
  createFixerNode,
  createGeneratorNode,
  createNodeDeps,
  createSandbox,
  finishNode,
  InvalidSettingsError,
  parseSettings,
  routeAfterCritic,
  ScriptedChatModel,
  State,
  type Verifier,
  withSettings,
} from "../../src/internal.js";
import { fence, promptText, scriptedModel } from "../helpers/helpers.js";

const sandbox = createSandbox({ kind: "process" });

describe("extending the graph", () => {
  it("lets an after-execution verifier fail a clean run like any other error", async () => {
    const noTodo: Verifier = {
      name: "noPrintDebug",
      stage: "after",
      check: (state) =>
        state.lastRun?.stdout.includes("DEBUG")
          ? { type: "StylePolicy", message: "debug output left in the program" }
          : null,
    };
    const model = scriptedModel(
      fence("print('DEBUG x=1')\nprint(42)"),
      fence("print('DEBUG still here')\nprint(42)"),
      (messages) => {
        expect(promptText(messages)).toContain("StylePolicy: debug output left in the program");
        return fence("print(42)");
      },
    );
    const result = await createAgent({ model, sandbox, verifiers: [noTodo] }).invoke(
      { task: "Print 42." },
      { context: parseSettings({ repeatLimit: 5 }) },
    );
    expect(result.status).toBe("passed");
    expect(result.attempt).toBe(3);
    expect(result.errors).toEqual([
      expect.objectContaining({ type: "StylePolicy", count: 2, firstAttempt: 1, lastAttempt: 2 }),
    ]);
  });

  it("runs inserted steps before and after execution, in order", async () => {
    const seen: string[] = [];
    const model = scriptedModel(fence("print('x')   "));
    const agent = createAgent({
      model,
      sandbox,
      before: [
        { name: "stripTrailingSpace", node: (state) => ({ code: state.code.replace(/[ \t]+$/gm, "") }) },
        {
          name: "recordBefore",
          node: (state) => {
            seen.push(`before:${JSON.stringify(state.code)}`);
            return {};
          },
        },
      ],
      after: [
        {
          name: "recordAfter",
          node: (state) => {
            seen.push(`after:${state.lastRun?.status}`);
            return {};
          },
        },
      ],
    });
    const result = await agent.invoke({ task: "Print x." });
    expect(result.status).toBe("passed");
    expect(result.code).toBe("print('x')\n");
    expect(seen).toEqual(["before:\"print('x')\\n\"", "after:ok"]);
    const drawn = await agent.getGraphAsync();
    expect(Object.keys(drawn.nodes)).toEqual(
      expect.arrayContaining(["stripTrailingSpace", "recordBefore", "recordAfter"]),
    );
  });

  it("replaces a core node and keeps the routing around it", async () => {
    const model = scriptedModel(fence("print('wrong')"), fence("print('right')"));
    const agent = createAgent({
      model,
      sandbox,
      replace: {
        critic: (_deps, builtIn) => async (state, config) => {
          const update = await builtIn(state, config);
          if (state.lastRun?.stdout.trim() !== "right") {
            return {
              ...update,
              status: "running",
              reason: undefined,
              decision: { next: "fixer" },
              critique: { passed: false, summary: "wrong output", diagnosis: "print right" },
              errors: [
                { fingerprint: "wrong-output", type: "WrongOutput", message: "printed wrong", attempt: state.attempt },
              ],
            };
          }
          return update;
        },
      },
    });
    const result = await agent.invoke({ task: "Print right." });
    expect(result.status).toBe("passed");
    expect(result.attempt).toBe(2);
    expect(result.errors[0]).toMatchObject({ type: "WrongOutput" });
  });

  it("refuses a round of candidates that would run past its steps and verifiers, before any model call", async () => {
    const model = new ScriptedChatModel([fence("print(1)")]);
    const agent = createAgent({
      model,
      sandbox,
      verifiers: [{ name: "noSecrets", stage: "after", check: () => null }],
      before: [{ name: "tidy", node: () => ({}) }],
      replace: { executor: (_deps, builtIn) => builtIn },
    });
    await expect(agent.invoke({ task: "Print 1." }, { context: { candidates: 2 } })).rejects.toThrow(
      new InvalidSettingsError(
        "a round of candidates would run past this agent's tidy, noSecrets, the replaced executor: set candidates to 1 to use them",
      ),
    );
    expect(model.prompts).toHaveLength(0);
    // One program at a time takes every step.
    expect(await agent.invoke({ task: "Print 1." }, { context: { candidates: 1 } })).toMatchObject({
      status: "passed",
    });
    // An agent with no steps of its own runs its rounds as before.
    const plain = createAgent({ model: new ScriptedChatModel([fence("print(1)")]), sandbox });
    expect(await plain.invoke({ task: "Print 1." }, { context: { candidates: 2 } })).toMatchObject({
      status: "passed",
    });
  });

  it("refuses an extra node whose name clashes", () => {
    expect(() => createAgent({ before: [{ name: "critic", node: () => ({}) }] })).toThrow(/critic/);
  });

  it("composes a graph of its own from the exported parts", async () => {
    const deps = createNodeDeps({ model: scriptedModel(fence("print(1/0)"), fence("print(1)")), sandbox });
    const graph = new StateGraph(State)
      .addNode("generator", withSettings(createGeneratorNode(deps)))
      .addNode("executor", withSettings(createExecutorNode(deps)))
      .addNode("critic", withSettings(createCriticNode(deps)))
      .addNode("fixer", withSettings(createFixerNode(deps)))
      .addNode("finish", withSettings(finishNode))
      .addEdge(START, "generator")
      .addEdge("generator", "executor")
      .addEdge("executor", "critic")
      .addConditionalEdges("critic", routeAfterCritic, [...AFTER_CRITIC_TARGETS])
      .addEdge("fixer", "executor")
      .addEdge("finish", END)
      .compile();
    const result = await graph.invoke({ task: "Print 1." });
    expect(result.status).toBe("passed");
    expect(result.attempt).toBe(2);
  });
});
