import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgent, createChatModel, createSandbox, parseSettings } from "../src/index.js";
import { fence } from "./helpers.js";
import { startOpenAIStub, type OpenAIStub, type StubRequest } from "./openai-stub.js";

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
    expect(result.errors).toEqual([expect.objectContaining({ type: "ReviewRejected", message: "it multiplies instead of adding" })]);
    expect(result.usage.byNode.critic).toEqual({ inputTokens: 180, outputTokens: 40, totalTokens: 220, calls: 2 });
    expect(result.usage.byNode.fixer?.calls).toBe(1);
    expect(stub.requests.filter(isReview)).toHaveLength(2);
  });

  it("does not ask the reviewer when the task has acceptance tests", async () => {
    const before = stub.requests.length;
    const model = createChatModel("gpt-4o-mini", { temperature: 0 }, { OPENAI_BASE_URL: stub.url });
    const agent = createAgent({ model, sandbox: createSandbox({ kind: "process" }) });
    const result = await agent.invoke({ task: "Write add(a, b).", tests: "assert add(2, 3) == 6" }, { context: parseSettings({ llmReview: true }) });
    expect(result.status).toBe("passed"); // a * b: 2 * 3 == 6, the tests are the judge here
    expect(stub.requests.slice(before).some(isReview)).toBe(false);
  });
});
