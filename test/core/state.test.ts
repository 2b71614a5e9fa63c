import { MemorySaver, START, StateGraph } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import { addUsage, emptyUsage, mergeErrors } from "../../src/core/ledger.js";
import { type AgentState, type AgentUpdate, reducedState, State } from "../../src/core/state.js";

describe("mergeErrors", () => {
  it("bumps the count of a repeated fingerprint instead of adding a row", () => {
    const once = mergeErrors([], [{ fingerprint: "f1", type: "KeyError", message: "'x'", attempt: 1 }]);
    const twice = mergeErrors(once, [{ fingerprint: "f1", type: "KeyError", message: "'x'", attempt: 3 }]);
    expect(twice).toEqual([
      { fingerprint: "f1", type: "KeyError", message: "'x'", count: 2, firstAttempt: 1, lastAttempt: 3 },
    ]);
    const other = mergeErrors(twice, [{ fingerprint: "f2", type: "TypeError", message: "bad", attempt: 4 }]);
    expect(other).toHaveLength(2);
    expect(once[0]?.count).toBe(1);
  });
});

describe("addUsage", () => {
  it("sums calls in total and per node", () => {
    const usage = addUsage(emptyUsage(), [
      { node: "generator", inputTokens: 100, outputTokens: 50 },
      { node: "fixer", inputTokens: 10, outputTokens: 5 },
      { node: "fixer", inputTokens: 1, outputTokens: 1 },
    ]);
    expect(usage).toMatchObject({ inputTokens: 111, outputTokens: 56, totalTokens: 167, calls: 3 });
    expect(usage.byNode.fixer).toEqual({ inputTokens: 11, outputTokens: 6, totalTokens: 17, calls: 2 });
    expect(usage.byNode.generator?.totalTokens).toBe(150);
  });
});

describe("reducedState", () => {
  it("makes the state LangGraph makes from the same state and update, through the same reducers", async () => {
    const before: AgentUpdate = {
      task: "Print one.",
      attempt: 2,
      usage: [{ node: "generator", inputTokens: 100, outputTokens: 20 }],
      errors: [{ fingerprint: "f1", type: "KeyError", message: "'x'", attempt: 1 }],
      history: [{ attempt: 1, node: "generator", codeHash: "a", outcome: "KeyError", tokens: 120, score: 1 }],
      best: { attempt: 1, code: "print(0)", score: 1 },
    };
    const update: AgentUpdate = {
      critique: { passed: false, summary: "KeyError again", diagnosis: "" },
      usage: [{ node: "fixer", inputTokens: 50, outputTokens: 10 }],
      errors: [{ fingerprint: "f1", type: "KeyError", message: "'x'", attempt: 2 }],
      history: [{ attempt: 2, node: "fixer", codeHash: "b", outcome: "KeyError", tokens: 60, score: 0 }],
      best: { attempt: 2, code: "print(1)", score: 0 },
      status: undefined,
    };
    // A graph that writes `before`, then `update`: the state between them, and after, read back.
    const graph = new StateGraph(State)
      .addNode("seed", () => before)
      .addNode("write", () => update)
      .addEdge(START, "seed")
      .addEdge("seed", "write")
      .compile({ checkpointer: new MemorySaver() });
    const config = { configurable: { thread_id: "reduced" } };
    const afterLangGraph = (await graph.invoke({ task: "Print one." }, config)) as AgentState;
    let start: AgentState | undefined;
    for await (const snapshot of graph.getStateHistory(config)) {
      if (snapshot.next.includes("write")) start = snapshot.values as AgentState;
    }
    if (!start) throw new Error("no checkpoint between the two writes");
    expect(reducedState(start, update)).toEqual(afterLangGraph);
    // What the reducers did, written down: errors merged by fingerprint, usage summed, history
    // appended, the best attempt kept at the higher score, status not written.
    expect(afterLangGraph.errors).toEqual([
      { fingerprint: "f1", type: "KeyError", message: "'x'", count: 2, firstAttempt: 1, lastAttempt: 2 },
    ]);
    expect(afterLangGraph.usage).toMatchObject({ totalTokens: 180, calls: 2 });
    expect(afterLangGraph.history.map((entry) => entry.attempt)).toEqual([1, 2]);
    expect(afterLangGraph.best).toEqual({ attempt: 1, code: "print(0)", score: 1 });
    expect(afterLangGraph.status).toBe("running");
  });
});
