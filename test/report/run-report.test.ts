import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Command } from "@langchain/langgraph";
import { afterAll, describe, expect, it } from "vitest";
import { traceThread } from "../../src/cli/commands/report.js";
import {
  type AgentState,
  createAgent,
  createSandbox,
  parseSettings,
  ScriptedChatModel,
  type TestIsolation,
} from "../../src/internal.js";
import {
  detailedAttempts,
  edgeCounts,
  type RunStep,
  renderGraphPath,
  renderRunReport,
  traceRun,
} from "../../src/report/index.js";
import { openRunStore } from "../../src/store/index.js";
import { fence, ranWithArtifacts } from "../helpers/helpers.js";
import { scratchDir } from "../helpers/scratch.js";

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

  it("draws a kept image inline, links every kept file with its size and sha256, and lists the others' files as not kept", () => {
    const folder = scratchDir("kept");
    const png = Buffer.from(
      "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
      "base64",
    );
    mkdirSync(join(folder, "out"));
    writeFileSync(join(folder, "out", "chart.png"), png);
    writeFileSync(join(folder, "out", "totals.csv"), "a,1\n");
    const file = (name: string, bytes: number, mediaType: string) => ({
      name,
      bytes,
      sha256: `sha-${name}`,
      mediaType,
    });
    const chart = file("out/chart.png", png.length, "image/png");
    const csv = file("out/totals.csv", 4, "text/csv");
    const hostile = file("out/<img src=x onerror=alert(1)>.png", 9, "image/png");
    const steps = twoAttempts();
    const runWith = (files: ReturnType<typeof file>[]) => ranWithArtifacts(files);
    steps[1]!.values.lastRun = runWith([hostile]);
    steps[2]!.values.lastRun = runWith([chart, csv]);
    steps[2]!.values.artifacts = { attempt: 2, folder, files: [chart, csv] };
    const trace = traceRun(steps);
    expect(trace.attempts.map((attempt) => attempt.artifacts?.folder ?? null)).toEqual([null, folder]);
    expect(trace.artifacts).toEqual({ attempt: 2, folder, files: [chart, csv] });

    const html = renderRunReport(trace);
    expect(html).toContain("<h4>Artifacts (kept from attempt 2)</h4>");
    expect(html).toContain(`src="data:image/png;base64,${png.toString("base64")}"`);
    expect(html).toContain(
      `<a href="${pathToFileURL(join(folder, "out/totals.csv")).href}">out/totals.csv</a> (4 bytes, text/csv, sha256 <code>sha-out/totals.csv</code>)`,
    );
    expect(html).toContain("&lt;img src=x onerror=alert(1)&gt;.png</code> (9 bytes, image/png, sha256");
    expect(html).not.toContain("<img src=x");
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

  it("says at each attempt's verdict which way a real run's tests were judged, under either setting", async () => {
    /** The report of a run whose draft fails its tests and whose repair passes them. */
    const reportOf = async (tests: string | undefined, testIsolation: TestIsolation) => {
      const model = new ScriptedChatModel([
        fence("def inc(x):\n    return x + 2"),
        fence("def inc(x):\n    return x + 1"),
      ]);
      const steps: RunStep[] = [];
      for await (const values of await createAgent({ model, sandbox }).stream(
        { task: "Write inc(x) that adds one.", ...(tests ? { tests } : {}) },
        { context: { testIsolation }, streamMode: "values" },
      ))
        steps.push({ values: values as AgentState });
      return renderRunReport(traceRun(steps));
    };
    const judged = (html: string) => html.match(/<p class="test-isolation">[^<]*<\/p>/g);
    const tests = "assert inc(1) == 2\n";
    expect(judged(await reportOf(tests, "process"))).toEqual([
      '<p class="test-isolation">Judged with tests in their own process.</p>',
      '<p class="test-isolation">Judged with tests in their own process.</p>',
    ]);
    expect(judged(await reportOf(tests, "shared"))).toEqual([
      '<p class="test-isolation">Judged with tests in the program&#39;s process (testIsolation: shared).</p>',
      '<p class="test-isolation">Judged with tests in the program&#39;s process (testIsolation: shared).</p>',
    ]);
    expect(judged(await reportOf(undefined, "process"))).toBeNull();
  });

  it("shows per attempt whether the LLM review ran and what it concluded", () => {
    const critic = (tokens: number) => ({ inputTokens: tokens, outputTokens: 0, totalTokens: tokens, calls: 1 });
    const withCritic = (base: AgentState["usage"], tokens: number): AgentState["usage"] => ({
      ...base,
      byNode: { ...base.byNode, critic: critic(tokens) },
    });
    const steps = twoAttempts();
    const first = steps[1]!.values;
    first.history = [{ ...first.history![0]!, outcome: "ReviewRejected" }];
    first.critique = { passed: false, summary: "Review: it prints nothing", diagnosis: "print the total" };
    first.usage = withCritic(first.usage!, 30);
    steps[2]!.values.history = [first.history[0]!, steps[2]!.values.history![1]!];
    steps[2]!.values.usage = withCritic(steps[2]!.values.usage!, 60);
    const trace = traceRun(steps);
    expect(trace.attempts.map((attempt) => attempt.review)).toEqual([
      { verdict: "rejected", reasons: "it prints nothing" },
      { verdict: "approved" },
    ]);
    const html = renderRunReport(trace);
    expect(html).toContain(
      'The critic model reviewed the clean run: <span class="fail">rejected</span>: it prints nothing',
    );
    expect(html).toContain('The critic model reviewed the clean run: <span class="pass">approved</span>');
    expect(renderRunReport(traceRun(twoAttempts()))).not.toContain("reviewed the clean run");
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

  it("draws only the nodes the run visited, in the graph's order, with end last", () => {
    // The graph's own order puts nodes this run never reached between finish and end.
    const nodes = [
      "__start__",
      "generator",
      "executor",
      "critic",
      "fixer",
      "candidate",
      "join",
      "finish",
      "approval",
      "__end__",
    ];
    const edges = [
      { source: "critic", target: "fixer" },
      { source: "critic", target: "approval" },
      { source: "fixer", target: "executor" },
      { source: "critic", target: "finish" },
    ];
    const path = ["generator", "executor", "critic", "finish"];
    const svg = renderGraphPath({ path, status: "passed", graph: { nodes, edges } });
    expect([...svg.matchAll(/data-node="([^"]+)"/g)].map((match) => match[1])).toEqual([
      "__start__",
      "generator",
      "executor",
      "critic",
      "finish",
      "__end__",
    ]);
    // A graph edge between two drawn nodes is drawn dashed; one to a node not drawn is not drawn.
    expect(svg).toContain('data-edge="critic&gt;finish" data-count="1"');
    expect(svg).not.toContain('data-edge="critic&gt;fixer"');
    expect(svg).not.toContain("approval");
    expect(svg).toMatch(/<svg id="graph-path" [^>]*width="828" height="[0-9]+" style="max-width:100%;height:auto"/);
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
