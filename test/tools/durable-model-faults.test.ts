import { join } from "node:path";
import { Command } from "@langchain/langgraph";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createAgent, createChatModel, createSandbox, parseSettings } from "../../src/index.js";
import { openRunStore, type RunStore } from "../../src/store/index.js";
import { fence } from "../helpers/helpers.js";
import { type OpenAIStub, type StubAnswer, startOpenAIStub } from "../helpers/openai-stub.js";
import { scratchDir } from "../helpers/scratch.js";

// The real ChatOpenAI client against a local HTTP server: retries, usage and cut-off replies take
// the same path as with a hosted provider.
const sandbox = createSandbox({ kind: "process" });
const dir = scratchDir("faults");
const stubs: OpenAIStub[] = [];
const stores: RunStore[] = [];

afterEach(async () => {
  await Promise.all(stubs.splice(0).map((stub) => stub.close()));
  await Promise.all(stores.splice(0).map((store) => store.close()));
});
afterAll(() => sandbox.close());

async function stubServer(answer: (index: number) => StubAnswer): Promise<OpenAIStub> {
  const stub = await startOpenAIStub((_request, index) => answer(index));
  stubs.push(stub);
  return stub;
}

async function agentFor(stub: OpenAIStub, retries: number) {
  const store = await openRunStore({ kind: "sqlite", path: join(dir, `${stores.length}-${Date.now()}.db`) });
  stores.push(store);
  const model = createChatModel(
    "stub-model",
    { temperature: 0 },
    { OPENAI_BASE_URL: stub.url, SELFHEAL_MODEL_RETRIES: String(retries) },
  );
  return createAgent({ model, sandbox, checkpointer: store.checkpointer });
}

const settings = parseSettings({ maxAttempts: 3 });

describe("model faults against an OpenAI-compatible server", () => {
  it("retries a 429 and a 500 with growing backoff and books the server's token usage", async () => {
    const stub = await stubServer((index) =>
      index === 0
        ? { status: 429, message: "slow down" }
        : index === 1
          ? { status: 500 }
          : { content: fence("print('ok')"), usage: { prompt_tokens: 321, completion_tokens: 12 } },
    );
    const agent = await agentFor(stub, 2);
    const result = await agent.invoke(
      { task: "Print ok." },
      { context: settings, configurable: { thread_id: "retry" } },
    );

    expect(result.status).toBe("passed");
    expect(stub.requests).toHaveLength(3);
    const [first, second, third] = stub.receivedAt;
    const gaps = [second! - first!, third! - second!];
    // The openai SDK waits 0.5 s, then 1 s, each less up to 25 % jitter.
    expect(gaps[0]).toBeGreaterThanOrEqual(350);
    expect(gaps[1]).toBeGreaterThanOrEqual(700);
    expect(gaps[1]).toBeGreaterThan(gaps[0]!);
    expect(result.usage).toMatchObject({ inputTokens: 321, outputTokens: 12, totalTokens: 333, calls: 1 });
  });

  it("ends as model_error when retries run out, keeps the checkpoint, and resumes once the server answers", async () => {
    let healthy = false;
    const stub = await stubServer(() =>
      healthy
        ? { content: fence("print('back')"), usage: { prompt_tokens: 50, completion_tokens: 5 } }
        : { status: 500, message: "upstream down" },
    );
    const agent = await agentFor(stub, 1);
    const config = { context: settings, configurable: { thread_id: "exhausted" } };

    const failed = await agent.invoke({ task: "Print back." }, config);
    expect(failed.status).toBe("model_error");
    expect(failed.reason).toMatch(/generator model call failed.*500/);
    expect(stub.requests).toHaveLength(2);

    const saved = await agent.getState(config);
    expect(saved.values).toMatchObject({ status: "model_error", resumeFrom: "generator", attempt: 0 });

    healthy = true;
    const resumed = await agent.invoke(
      new Command({ goto: "generator", update: { status: "running", reason: undefined, resumeFrom: undefined } }),
      config,
    );
    expect(resumed.status).toBe("passed");
    expect(resumed.attempt).toBe(1);
    expect(resumed.lastRun?.stdout).toBe("back\n");
    expect(stub.requests).toHaveLength(3);
  });

  it("treats a reply cut off at the output cap like a reply with no program", async () => {
    const stub = await stubServer((index) =>
      index === 0
        ? {
            content: "```python\nprint('this program never fin",
            finishReason: "length",
            usage: { prompt_tokens: 40, completion_tokens: 64 },
          }
        : { content: fence("print('complete')"), usage: { prompt_tokens: 60, completion_tokens: 8 } },
    );
    const agent = await agentFor(stub, 0);
    const result = await agent.invoke(
      { task: "Print complete." },
      { context: settings, configurable: { thread_id: "cut-off" } },
    );

    expect(result.status).toBe("passed");
    expect(result.attempt).toBe(2);
    expect(result.history[0]).toMatchObject({ outcome: "NoCodeError" });
    expect(result.errors[0]?.message).toMatch(/cut off at the output cap/);
    // The half program never ran; the fixer was told why.
    expect(result.lastRun?.stdout).toBe("complete\n");
    expect(stub.requests[1]?.messages.at(-1)?.content).toMatch(/cut off at the output cap/);
  });
});
