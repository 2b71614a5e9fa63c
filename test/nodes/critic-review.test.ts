import { Command, MemorySaver } from "@langchain/langgraph";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createAgent, createChatModel, createSandbox, parseSettings } from "../../src/index.js";
import { buildReviewPrompt } from "../../src/nodes/critic.prompt.js";
import { planModelCall } from "../../src/tools/budget.js";
import { countMessageTokens } from "../../src/tools/tokens.js";
import { freePort } from "../helpers/cli-helpers.js";
import { fence } from "../helpers/helpers.js";
import { type OpenAIStub, type StubAnswer, type StubRequest, startOpenAIStub } from "../helpers/openai-stub.js";

const isReview = (request: StubRequest & { response_format?: unknown }) => request.response_format !== undefined;
const lastUserText = (request: StubRequest) => request.messages.at(-1)?.content ?? "";

describe("the critic's LLM review (real ChatOpenAI structured output against a local server)", () => {
  let stub: OpenAIStub;
  beforeAll(async () => {
    stub = await startOpenAIStub((request) => {
      if (isReview(request)) {
        const approves = lastUserText(request).includes("a + b");
        const verdict = approves
          ? { passed: true, reasons: ["adds the numbers"], fixHint: "" }
          : { passed: false, reasons: ["it multiplies instead of adding"], fixHint: "return a + b, not a * b" };
        return { content: JSON.stringify(verdict), usage: { prompt_tokens: 90, completion_tokens: 20 } };
      }
      const program = lastUserText(request).includes("return a + b, not a * b")
        ? "def add(a, b):\n    return a + b\n\nprint(add(2, 2))"
        : "def add(a, b):\n    return a * b\n\nprint(add(2, 2))";
      return { content: fence(program), usage: { prompt_tokens: 150, completion_tokens: 40 } };
    });
  });
  afterAll(() => stub.close());

  it("fails a clean run the reviewer rejects, gives its hint to the fixer, and passes the fix", async () => {
    const model = createChatModel("gpt-4o-mini", { temperature: 0 }, { OPENAI_BASE_URL: stub.url });
    const agent = createAgent({ model, sandbox: createSandbox({ kind: "process" }) });
    const result = await agent.invoke({ task: "Write add(a, b)." }, { context: parseSettings({ llmReview: true }) });

    expect(result.status).toBe("passed");
    expect(result.attempt).toBe(2);
    expect(result.errors).toEqual([
      expect.objectContaining({ type: "ReviewRejected", message: "it multiplies instead of adding" }),
    ]);
    expect(result.usage.byNode.critic).toEqual({ inputTokens: 180, outputTokens: 40, totalTokens: 220, calls: 2 });
    expect(result.usage.byNode.fixer?.calls).toBe(1);
    expect(stub.requests.filter(isReview)).toHaveLength(2);
  });

  it("does not ask the reviewer when the task has acceptance tests", async () => {
    const before = stub.requests.length;
    const model = createChatModel("gpt-4o-mini", { temperature: 0 }, { OPENAI_BASE_URL: stub.url });
    const agent = createAgent({ model, sandbox: createSandbox({ kind: "process" }) });
    const result = await agent.invoke(
      { task: "Write add(a, b).", tests: "assert add(2, 3) == 6" },
      { context: parseSettings({ llmReview: true }) },
    );
    expect(result.status).toBe("passed"); // a * b: 2 * 3 == 6, the tests are the judge here
    expect(stub.requests.slice(before).some(isReview)).toBe(false);
  });
});

describe("an LLM review that cannot be had is never a pass", () => {
  const sandbox = createSandbox({ kind: "process" });
  const stubs: OpenAIStub[] = [];
  afterEach(async () => {
    await Promise.all(stubs.splice(0).map((server) => server.close()));
  });
  afterAll(() => sandbox.close());

  const task = "Write add(a, b) and print add(2, 2).";
  const program = "def add(a, b):\n    return a + b\n\nprint(add(2, 2))";
  const approval = JSON.stringify({ passed: true, reasons: ["adds the numbers"], fixHint: "" });

  async function server(answer: (request: StubRequest, index: number) => StubAnswer): Promise<OpenAIStub> {
    const started = await startOpenAIStub(answer);
    stubs.push(started);
    return started;
  }
  /** The generator on a server that always writes the program, the reviewer on `reviewerUrl`. */
  async function agentWithReviewerAt(
    reviewerUrl: string,
    options: { checkpointer?: MemorySaver; generatorUsage?: { prompt_tokens: number; completion_tokens: number } } = {},
  ) {
    const writer = await server(() => ({
      content: fence(program),
      usage: options.generatorUsage ?? { prompt_tokens: 150, completion_tokens: 40 },
    }));
    const env = (url: string) => ({ OPENAI_BASE_URL: url, SELFHEAL_MODEL_RETRIES: "0" });
    return createAgent({
      model: createChatModel("gpt-4o-mini", { temperature: 0 }, env(writer.url)),
      criticModel: createChatModel("gpt-4o-mini", { temperature: 0 }, env(reviewerUrl)),
      sandbox,
      checkpointer: options.checkpointer,
    });
  }

  it("ends as model_error at the critic when the reviewer answers 429, and resuming there completes the review", async () => {
    let healthy = false;
    const reviewer = await server(() =>
      healthy
        ? { content: approval, usage: { prompt_tokens: 90, completion_tokens: 20 } }
        : { status: 429, message: "rate limited" },
    );
    const agent = await agentWithReviewerAt(reviewer.url, { checkpointer: new MemorySaver() });
    const config = { context: parseSettings({ llmReview: true }), configurable: { thread_id: "review-429" } };

    const failed = await agent.invoke({ task }, config);
    expect(failed.status).toBe("model_error");
    expect(failed.reason).toMatch(/critic model call failed \(LLM review\).*429/);
    expect(failed.resumeFrom).toBe("critic");
    expect(failed.history).toEqual([]);
    expect(reviewer.requests).toHaveLength(1);
    expect((await agent.getState(config)).values).toMatchObject({
      status: "model_error",
      resumeFrom: "critic",
      attempt: 1,
    });

    healthy = true;
    const resumed = await agent.invoke(
      new Command({ goto: failed.resumeFrom, update: { status: "running", reason: undefined, resumeFrom: undefined } }),
      config,
    );
    expect(resumed.status).toBe("passed");
    expect(resumed.attempt).toBe(1);
    expect(resumed.history).toEqual([expect.objectContaining({ attempt: 1, outcome: "passed" })]);
    expect(resumed.usage.byNode.critic).toEqual({ inputTokens: 90, outputTokens: 20, totalTokens: 110, calls: 1 });
    expect(reviewer.requests).toHaveLength(2);
  });

  it("ends as model_error when the review server is unreachable", async () => {
    const url = `http://127.0.0.1:${await freePort()}/v1`;
    const agent = await agentWithReviewerAt(url);
    const result = await agent.invoke({ task }, { context: parseSettings({ llmReview: true }) });
    expect(result.status).toBe("model_error");
    expect(result.reason).toContain(
      `critic model call failed (LLM review): could not connect to the server at ${url} (ECONNREFUSED)`,
    );
    expect(result.resumeFrom).toBe("critic");
  });

  it("ends as model_error when the reviewer's answer is not a review", async () => {
    const reviewer = await server(() => ({ content: "Looks fine to me!" }));
    const agent = await agentWithReviewerAt(reviewer.url);
    const result = await agent.invoke({ task }, { context: parseSettings({ llmReview: true }) });
    expect(result.status).toBe("model_error");
    expect(result.reason).toMatch(/critic model call returned no readable review \(LLM review\)/);
    expect(result.resumeFrom).toBe("critic");
  });

  it("books a review call whose answer is JSON but no review, and says in one line what it lacks", async () => {
    const reviewer = await server(() => ({
      content: JSON.stringify({ verdict: "approve" }),
      usage: { prompt_tokens: 70, completion_tokens: 6 },
    }));
    const agent = await agentWithReviewerAt(reviewer.url);
    const result = await agent.invoke({ task }, { context: parseSettings({ llmReview: true }) });
    expect(result.status).toBe("model_error");
    expect(result.reason).toBe(
      "The critic model call returned no readable review (LLM review): passed: Invalid input: expected boolean, received undefined; reasons: Invalid input: expected array, received undefined; fixHint: Invalid input: expected string, received undefined",
    );
    expect(reviewer.requests).toHaveLength(1);
    expect(result.usage.byNode.critic).toMatchObject({ outputTokens: 0, calls: 1 });
    expect(result.usage.byNode.critic?.inputTokens).toBeGreaterThan(50);
    expect(result.usage.calls).toBe(2);
  });

  it("ends as budget_exhausted, not passed, when no budget is left for the review", async () => {
    const reviewer = await server(() => ({ content: approval }));
    const agent = await agentWithReviewerAt(reviewer.url, {
      generatorUsage: { prompt_tokens: 1000, completion_tokens: 1000 },
    });
    const result = await agent.invoke({ task }, { context: parseSettings({ llmReview: true, tokenBudget: 2300 }) });
    expect(result.status).toBe("budget_exhausted");
    expect(result.reason).toMatch(/not reviewed/);
    expect(result.lastRun?.stdout).toBe("4\n");
    expect(reviewer.requests).toHaveLength(0);
  });

  it("counts the review's tokens itself when the server reports no usage", async () => {
    const reviewer = await server(() => ({ content: approval }));
    const agent = await agentWithReviewerAt(reviewer.url);
    const result = await agent.invoke({ task }, { context: parseSettings({ llmReview: true }) });
    expect(result.status).toBe("passed");
    expect(result.usage.byNode.critic?.calls).toBe(1);
    expect(result.usage.byNode.critic?.inputTokens).toBeGreaterThan(50);
    expect(result.usage.byNode.critic?.outputTokens).toBeGreaterThan(5);
  });

  it("sends the review's planned output cap as max_tokens", async () => {
    const reviewer = await server(() => ({ content: approval, usage: { prompt_tokens: 90, completion_tokens: 20 } }));
    const agent = await agentWithReviewerAt(reviewer.url, {
      generatorUsage: { prompt_tokens: 1000, completion_tokens: 1000 },
    });
    const settings = parseSettings({ llmReview: true, tokenBudget: 2500 });
    const result = await agent.invoke({ task }, { context: settings });
    expect(result.status).toBe("passed");

    const promptTokens = await countMessageTokens(
      buildReviewPrompt({ task, language: "python", code: result.code, run: result.lastRun! }),
    );
    const plan = planModelCall({
      promptTokens,
      usedTokens: 2000,
      tokenBudget: settings.tokenBudget,
      maxOutputTokens: 512,
    });
    expect(plan).toMatchObject({ ok: true });
    const cap = plan.ok ? plan.outputCap : 0;
    expect(cap).toBeLessThan(512); // the budget, not the default, sets this cap
    expect(reviewer.requests.map((request) => request.max_tokens)).toEqual([cap]);
  });
});
