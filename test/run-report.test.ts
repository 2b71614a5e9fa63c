import { join } from "node:path";
import { Command } from "@langchain/langgraph";
import { afterAll, describe, expect, it } from "vitest";
import { traceThread } from "../src/cli/commands/report.js";
import { type AgentState, createAgent, createSandbox, parseSettings, ScriptedChatModel } from "../src/index.js";
import { detailedAttempts, edgeCounts, type RunStep, renderRunReport, traceRun } from "../src/report/index.js";
import { openRunStore } from "../src/store/index.js";
import { fence } from "./helpers.js";
import { scratchDir } from "./scratch.js";

const sandbox = createSandbox({ kind: "process" });
afterAll(() => sandbox.close());

const usage = (generator: number, fixer = 0): AgentState["usage"] => {
  const count = (tokens: number) => ({ inputTokens: tokens, outputTokens: tokens, totalTokens: tokens * 2, calls: 1 });
  const byNode: AgentState["usage"]["byNode"] = { generator: count(generator) };
  if (fixer > 0) byNode.fixer = count(fixer);
  return { ...count(generator + fixer), byNode };
};

/** Two attempts, as a stream of steps would give them: the draft fails, the fixer's repair passes. */
function twoAttempts(extra: Record<string, unknown> = {}): RunStep[] {
  const first = { attempt: 1, node: "generator", codeHash: "a", outcome: "KeyError", fingerprint: "f1", tokens: 20 };
  const second = { attempt: 2, node: "fixer", codeHash: "b", outcome: "passed", tokens: 40 };
  return [
    { values: { task: "t", history: [], usage: usage(0) } },
    { node: "critic", values: { task: "t", code: "print(1)", history: [{ ...first, ...extra }], usage: usage(10) } },
    {
      node: "critic",
      values: {
        task: "t",
        code: "print(2)",
        status: "passed",
        history: [{ ...first, ...extra }, second],
        usage: usage(10, 20),
      },
    },
  ];
}

describe("a run's report, from its steps", () => {
  it("books each attempt the tokens spent since the verdict before, by node", () => {
    const trace = traceRun(twoAttempts());
    expect(trace.attempts.map((attempt) => attempt.tokensByNode)).toEqual([
      { generator: { inputTokens: 10, outputTokens: 10 } },
      { fixer: { inputTokens: 20, outputTokens: 20 } },
    ]);
  });

  it("shows the artifacts a history entry carries, escaped, and says nothing of them when there are none", () => {
    const withArtifacts = renderRunReport(
      traceRun(twoAttempts({ artifacts: [{ name: "<img src=x onerror=alert(1)>.png", bytes: 12 }] })),
    );
    expect(withArtifacts).toContain("<h4>Artifacts</h4>");
    expect(withArtifacts).toContain("&lt;img src=x onerror=alert(1)&gt;.png");
    expect(withArtifacts).not.toContain("<img");
    expect(renderRunReport(traceRun(twoAttempts()))).not.toContain("Artifacts");
  });

  it("says how many candidates of a real run of three printed the same", async () => {
    const model = new ScriptedChatModel([fence("print(6 * 7)"), fence("print(42)"), fence("print(41)")]);
    const steps: RunStep[] = [];
    for await (const values of await createAgent({ model, sandbox }).stream(
      { task: "Print 42." },
      { context: { candidates: 3 }, streamMode: "values" },
    ))
      steps.push({ values: values as AgentState });
    const trace = traceRun(steps);
    expect(trace.agreement).toBe("2 of 3 candidates print the same");
    expect(renderRunReport(trace)).toContain("<tr><th>candidates</th><td>2 of 3 candidates print the same</td></tr>");
    expect(renderRunReport(traceRun(twoAttempts()))).not.toContain("<th>candidates</th>");
  });

  it("counts how often the run took each edge, from start to end", () => {
    const nodes = ["__start__", "generator", "executor", "critic", "fixer", "__end__"];
    const path = ["input", "generator", "executor", "critic", "fixer", "executor", "critic"];
    expect(Object.fromEntries(edgeCounts({ path, status: "passed" }, nodes))).toEqual({
      "__start__>generator": 1,
      "generator>executor": 1,
      "executor>critic": 2,
      "critic>fixer": 1,
      "fixer>executor": 1,
      "critic>__end__": 1,
    });
    expect(edgeCounts({ path, status: "awaiting approval" }, nodes).has("critic>__end__")).toBe(false);
  });

  it("details every attempt of a short run, and only the first 5 and last 15 of a long one", () => {
    expect(Array.from({ length: 20 }, (_, index) => detailedAttempts(20)(index)).every(Boolean)).toBe(true);
    const long = detailedAttempts(30);
    expect([0, 4, 5, 14, 15, 29].map(long)).toEqual([true, true, false, false, true, true]);
  });

  it("reads a run paused for approval from the store: its attempts so far, and that it awaits approval", async () => {
    const store = await openRunStore({ kind: "sqlite", path: join(scratchDir("report-paused"), "runs.db") });
    try {
      const model = new ScriptedChatModel([fence("print({}['missing'])"), fence("print('fixed')")]);
      const agent = createAgent({ model, sandbox, checkpointer: store.checkpointer });
      const config = { context: parseSettings({ approval: true }), configurable: { thread_id: "paused" } };
      await agent.invoke({ task: "Print something." }, config);
      await agent.invoke(new Command({ resume: { action: "approve" } }), config);
      const trace = (await traceThread(store, "paused"))!;
      expect(trace.status).toBe("awaiting approval");
      expect(trace.attempts.map((attempt) => attempt.outcome)).toEqual(["KeyError"]);
      expect(trace.path.at(-1)).toBe("fixer");
      expect(renderRunReport(trace)).toContain("awaiting approval");
    } finally {
      await store.close();
    }
  });
});
