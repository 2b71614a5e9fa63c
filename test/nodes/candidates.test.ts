import { setTimeout as sleep } from "node:timers/promises";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { MemorySaver } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import { createAgent, createSandbox, parseSettings, type Sandbox } from "../../src/index.js";
import { countMessageTokens, messageText } from "../../src/tools/tokens.js";
import { fence } from "../helpers/helpers.js";

const sandbox = createSandbox({ kind: "process" });

/** One model call as the model saw it: when it ran, the cap it was sent, its prompt. */
interface CallRecord {
  start: number;
  end: number;
  maxTokens?: number;
  prompt: string;
  promptTokens: number;
}

type Reply = string | ((prompt: string, call: number) => string);

/**
 * A chat model that takes `sleepMs` to answer, like a remote one, and writes down each call. It
 * keeps a `maxTokens` field, so the agent sends it the output cap the way it sends ChatOpenAI's;
 * the agent makes a capped copy per call from the constructor fields, so the log is shared.
 */
class SlowScriptedModel extends BaseChatModel {
  maxTokens?: number;
  readonly replies: Reply[];
  readonly calls: CallRecord[];
  readonly sleepMs: number;

  constructor(fields: { replies: Reply[]; calls?: CallRecord[]; sleepMs?: number; maxTokens?: number }) {
    super({});
    this.replies = fields.replies;
    this.calls = fields.calls ?? [];
    this.sleepMs = fields.sleepMs ?? 0;
    this.maxTokens = fields.maxTokens;
    this.lc_kwargs = { replies: this.replies, calls: this.calls, sleepMs: this.sleepMs };
  }

  _llmType(): string {
    return "slow-scripted";
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const prompt = messages.map(messageText).join("\n");
    const record: CallRecord = {
      start: performance.now(),
      end: 0,
      maxTokens: this.maxTokens,
      prompt,
      promptTokens: await countMessageTokens(messages),
    };
    const call = this.calls.push(record) - 1;
    await sleep(this.sleepMs);
    record.end = performance.now();
    const reply = this.replies[Math.min(call, this.replies.length - 1)]!;
    const text = typeof reply === "function" ? reply(prompt, call) : reply;
    return { generations: [{ text, message: new AIMessage(text) }] };
  }
}

const program = (body: string) => fence(`def square(x):\n    ${body}\n`);
const squareTests = "assert square(2) == 4\nassert square(3) == 9\n";

describe("a round of candidates", () => {
  it("ends after one round when one of four candidates passes, with the four calls made at once", async () => {
    const model = new SlowScriptedModel({
      sleepMs: 400,
      replies: [program("return x + x"), program("return x ** 3"), program("return x * x"), program("return -x")],
    });
    const result = await createAgent({ model, sandbox }).invoke(
      { task: "Write square(x).", tests: squareTests },
      { context: { candidates: 4 } },
    );
    expect(result.status).toBe("passed");
    expect(result.attempt).toBe(1);
    expect(model.calls).toHaveLength(4);
    // Every call began before any had answered: the four model latencies were paid once, together.
    const lastStart = Math.max(...model.calls.map((call) => call.start));
    const firstEnd = Math.min(...model.calls.map((call) => call.end));
    expect(lastStart).toBeLessThan(firstEnd);
    expect(result.code).toContain("return x * x");
    expect(result.candidates?.map((candidate) => candidate.outcome)).toEqual([
      "AssertionError",
      "AssertionError",
      "passed",
      "AssertionError",
    ]);
    expect(result.candidateChoice).toMatchObject({ round: 1, size: 4, chosen: 2, passed: 1 });
    expect(result.history).toEqual([expect.objectContaining({ attempt: 1, node: "candidate", outcome: "passed" })]);
    expect(result.usage.calls).toBe(4);
    expect(result.usage.byNode.candidate?.calls).toBe(4);
  });

  it("repairs the best of the largest group when none passes, and tells the fixer how the groups disagree", async () => {
    const model = new SlowScriptedModel({
      replies: [
        program("return x ** 3"),
        program("return x + x"),
        program("return 2 * x"),
        program("raise ValueError('no')"),
        program("return x * x"),
      ],
    });
    const result = await createAgent({ model, sandbox }).invoke(
      { task: "Write square(x).", tests: squareTests },
      { context: { candidates: 4 } },
    );
    expect(result.status).toBe("passed");
    expect(result.attempt).toBe(2);
    expect(model.calls).toHaveLength(5);
    expect(result.history.map((entry) => [entry.node, entry.outcome])).toEqual([
      ["candidate", "AssertionError"],
      ["fixer", "passed"],
    ]);
    expect(result.candidateChoice).toMatchObject({
      round: 1,
      passed: 0,
      agreement: "2 of 4 candidates behave the same on the tests' calls",
      groups: [
        { members: [1, 2], shows: "checks get 4, 6" },
        { members: [0], shows: "checks get 8, 27" },
        { members: [3], shows: "checks get raises ValueError, raises ValueError" },
      ],
    });
    // The fixer repaired the first of the two that agree (x + x), and read how the four differ.
    const fixerPrompt = model.calls[4]!.prompt;
    expect(fixerPrompt).toContain("return x + x");
    expect(fixerPrompt).toContain("2 candidates (#2, #3): checks get 4, 6");
    expect(fixerPrompt).toContain("1 candidate (#1): checks get 8, 27");
  });

  it("reports how many candidates print the same when there are no tests", async () => {
    const model = new SlowScriptedModel({
      replies: [fence("print(6 * 7)"), fence("print(7 * 6)"), fence("print(6 + 7)"), fence("print(42 * 1)")],
    });
    const result = await createAgent({ model, sandbox }).invoke(
      { task: "Print six times seven." },
      { context: { candidates: 4 } },
    );
    expect(result.status).toBe("passed");
    expect(result.candidateChoice?.agreement).toBe("3 of 4 candidates print the same");
    expect(result.candidateChoice?.groups.map((group) => group.members)).toEqual([[0, 1, 3], [2]]);
  });

  it("resumes a fan-out that crashed without writing again the candidates that had finished", async () => {
    let crashes = 1;
    const checkpointer = new MemorySaver();
    // Tasks whose successful writes the checkpointer holds: the input's, then each finished candidate's.
    const tasksWithWrites = () =>
      new Set(
        Object.values(checkpointer.writes)
          .flatMap((writes) => Object.keys(writes))
          .filter((key) => !key.endsWith(",-1"))
          .map((key) => key.split(",")[0]),
      ).size;
    // The sandbox fails for the one program that asks for it, once, when the two others have been
    // saved: a crash that came earlier would cancel them, and they would rightly run again.
    const crashing: Sandbox = {
      ...sandbox,
      kind: sandbox.kind,
      mountsPackages: sandbox.mountsPackages,
      run: async (request, hooks) => {
        // With runtime values on, the program travels in the harness's files, not in `code`.
        const sources = [request.code, ...Object.values(request.files ?? {})];
        if (sources.some((source) => source.includes("CRASH")) && crashes-- > 0) {
          while (tasksWithWrites() < 3) await sleep(20);
          throw new Error("the sandbox went away");
        }
        return sandbox.run(request, hooks);
      },
    };
    const model = new SlowScriptedModel({
      replies: [
        program("return x + x"),
        program("return x * x  # CRASH"),
        program("return -x"),
        program("return x * x"),
      ],
    });
    const agent = createAgent({ model, sandbox: crashing, checkpointer });
    const config = { configurable: { thread_id: "crash-in-fan-out" }, context: { candidates: 3 } };
    await expect(agent.invoke({ task: "Write square(x).", tests: squareTests }, config)).rejects.toThrow(
      "the sandbox went away",
    );
    expect(model.calls).toHaveLength(3);
    const result = await agent.invoke(null, config);
    expect(result.status).toBe("passed");
    expect(result.attempt).toBe(1);
    // Only the candidate that crashed was written again (its model call is the fourth); the two
    // that had finished came back from the checkpoint.
    expect(model.calls).toHaveLength(4);
    expect(result.candidates?.map((candidate) => candidate.outcome)).toEqual([
      "AssertionError",
      "passed",
      "AssertionError",
    ]);
  });
});

describe("inputs the model proposes", () => {
  it("asks once, beside the first round, and regroups the failing candidates by what they return on them", async () => {
    const programs = [
      program("return x * 2 if x < 5 else x + x"),
      program("return x + 2 if x < 5 else x * 2"),
      program("return x * x if x < 5 else x * x + 1"),
      program("return 2 * x"),
    ];
    let written = 0;
    const model = new SlowScriptedModel({
      replies: [
        (prompt) => (prompt.includes("Propose up to 2 calls") ? fence("square(3)\nsquare(") : programs[written++]!),
      ],
    });
    const result = await createAgent({ model, sandbox }).invoke(
      { task: "Write square(x).", tests: "assert square(2) == 4\nassert square(10) == 100\n" },
      { context: { candidates: 4, proposedInputs: 2, maxAttempts: 1 } },
    );
    expect(result.status).toBe("failed");
    expect(model.calls).toHaveLength(5);
    expect(model.calls.filter((call) => call.prompt.includes("Propose up to 2 calls"))).toHaveLength(1);
    // The unfinished second line does not parse: it is skipped for every candidate alike.
    expect(result.proposedInputs).toEqual(["square(3)", "square("]);
    // On the tests' calls alone #1, #2 and #4 agree (4, 20); square(3) tells #2 (5) from #1 and #4 (6).
    expect(result.candidateChoice?.groups).toEqual([
      { members: [0, 3], shows: "checks get 4, 20, 6" },
      { members: [1], shows: "checks get 4, 20, 5" },
      { members: [2], shows: "checks get 4, 101, 9" },
    ]);
    expect(result.candidates?.map((candidate) => candidate.shows)).toEqual([
      "checks get 4, 20, 6",
      "checks get 4, 20, 5",
      "checks get 4, 101, 9",
      "checks get 4, 20, 6",
    ]);
    expect(result.usage.byNode.propose?.calls).toBe(1);
  });
});

describe("strategies and limits", () => {
  it("counts rounds against maxAttempts with resample, writing a fresh round after each failure", async () => {
    const model = new SlowScriptedModel({ replies: [program("return x + x"), program("return x ** 3")] });
    const result = await createAgent({ model, sandbox }).invoke(
      { task: "Write square(x).", tests: squareTests },
      { context: { candidates: 2, strategy: "resample", maxAttempts: 3, repeatLimit: 5 } },
    );
    expect(result.status).toBe("failed");
    expect(result.reason).toBe("Still failing after 3 of 3 attempts.");
    expect(model.calls).toHaveLength(6);
    expect(result.history.map((entry) => entry.node)).toEqual(["candidate", "candidate", "candidate"]);
    expect(model.calls.every((call) => call.prompt.includes("Write square(x)."))).toBe(true);
    expect(model.calls.some((call) => call.prompt.includes("Latest failure"))).toBe(false);
  });

  it("writes one repair beside the fresh candidates with mixed, and the repair reads how the last round disagreed", async () => {
    const model = new SlowScriptedModel({
      replies: [program("return x + x"), program("return x ** 3"), program("return x * x"), program("return -x")],
    });
    const result = await createAgent({ model, sandbox }).invoke(
      { task: "Write square(x).", tests: squareTests },
      { context: { candidates: 2, strategy: "mixed" } },
    );
    expect(result.status).toBe("passed");
    expect(result.attempt).toBe(2);
    expect(model.calls).toHaveLength(4);
    const repairPrompt = model.calls.find((call) => call.prompt.includes("Latest failure"));
    expect(repairPrompt?.prompt).toContain("Programs written for this task in parallel disagree");
    expect(result.candidates?.map((candidate) => [candidate.kind, candidate.outcome])).toEqual([
      ["repair", "passed"],
      ["fresh", "AssertionError"],
    ]);
  });

  it("runs at most sandboxConcurrency candidates in the sandbox at a time", async () => {
    const running = { now: 0, most: 0 };
    const counting: Sandbox = {
      ...sandbox,
      kind: sandbox.kind,
      mountsPackages: sandbox.mountsPackages,
      run: async (request, hooks) => {
        running.most = Math.max(running.most, ++running.now);
        try {
          return await sandbox.run(request, hooks);
        } finally {
          running.now--;
        }
      },
    };
    const model = new SlowScriptedModel({ sleepMs: 100, replies: [fence("print(42)")] });
    const result = await createAgent({ model, sandbox: counting }).invoke(
      { task: "Print 42." },
      { context: { candidates: 4, sandboxConcurrency: 1 } },
    );
    expect(result.status).toBe("passed");
    expect(result.candidates).toHaveLength(4);
    expect(running.most).toBe(1);
  });

  it("runs the candidates' programs side by side when the sandbox allows it", async () => {
    let started = 0;
    const waiting: Sandbox = {
      ...sandbox,
      kind: sandbox.kind,
      mountsPackages: sandbox.mountsPackages,
      run: async (request, hooks) => {
        started++;
        // Each run waits for all four to have started: only four slots at once let this finish.
        while (started < 4) await sleep(10);
        return sandbox.run(request, hooks);
      },
    };
    const model = new SlowScriptedModel({ replies: [fence("print(42)")] });
    const result = await createAgent({ model, sandbox: waiting }).invoke(
      { task: "Print 42." },
      { context: { candidates: 4, sandboxConcurrency: 4 } },
    );
    expect(result.status).toBe("passed");
    expect(started).toBe(4);
  });
});

describe("one budget for a round", () => {
  it("reserves each candidate's share before the fan-out, so calls made at once stay within the budget", async () => {
    const tokenBudget = 3000;
    const model = new SlowScriptedModel({ sleepMs: 200, replies: [program("return x + x")], maxTokens: 4096 });
    const result = await createAgent({ model, sandbox }).invoke(
      { task: "Write square(x).", tests: squareTests },
      { context: { candidates: 4, tokenBudget, maxAttempts: 1 } },
    );
    expect(result.status).toBe("failed");
    expect(model.calls).toHaveLength(4);
    const share = tokenBudget / 4;
    for (const call of model.calls)
      expect(call.promptTokens + (call.maxTokens ?? Number.POSITIVE_INFINITY)).toBe(share);
    expect(result.usage.totalTokens).toBeLessThanOrEqual(tokenBudget);
    // Without the reservation each call would have been capped at the default 2048 output tokens.
    expect(parseSettings({}).maxOutputTokens).toBe(2048);
  });

  it("ends the run as budget_exhausted, calling no model, when a share cannot pay for one call", async () => {
    const model = new SlowScriptedModel({ replies: [program("return x * x")] });
    const result = await createAgent({ model, sandbox }).invoke(
      { task: "Write square(x).", tests: squareTests },
      { context: { candidates: 4, tokenBudget: 1200 } },
    );
    expect(result.status).toBe("budget_exhausted");
    expect(result.reason).toMatch(/Token budget exhausted/);
    expect(model.calls).toHaveLength(0);
    expect(result.attempt).toBe(0);
  });
});
