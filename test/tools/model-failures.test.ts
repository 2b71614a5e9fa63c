import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { ChatResult } from "@langchain/core/outputs";
import { ChatOpenAI } from "@langchain/openai";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { createAgent, createChatModel, createSandbox, InvalidSettingsError, parseSettings } from "../../src/index.js";
import { describeModelEndpoint } from "../../src/tools/model-errors.js";
import { freePort, runCli } from "../helpers/cli-helpers.js";
import { fence } from "../helpers/helpers.js";
import { type OpenAIStub, type StubAnswer, startOpenAIStub } from "../helpers/openai-stub.js";

const sandbox = createSandbox({ kind: "process" });
const stubs: OpenAIStub[] = [];
afterEach(async () => {
  vi.unstubAllEnvs();
  await Promise.all(stubs.splice(0).map((stub) => stub.close()));
});
afterAll(() => sandbox.close());

async function stubAnswering(answer: StubAnswer): Promise<OpenAIStub> {
  const stub = await startOpenAIStub(() => answer);
  stubs.push(stub);
  return stub;
}

/** The environment of a person who has configured nothing. */
function clearModelEnv() {
  for (const name of [
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "SELFHEAL_MODEL",
    "SELFHEAL_MODEL_TIMEOUT_MS",
    "SELFHEAL_MODEL_RETRIES",
  ])
    vi.stubEnv(name, undefined);
}

/** A chat model that never answers and never looks at its abort signal: the worst case we wait on. */
class SilentChatModel extends BaseChatModel {
  calls = 0;
  _llmType() {
    return "silent";
  }
  _generate(): Promise<ChatResult> {
    this.calls += 1;
    return new Promise<ChatResult>(() => {});
  }
}

const task = { task: "Print ok." };

describe("a model server that hangs", () => {
  /**
   * A run with the model built from the environment (one retry) against a stub giving this
   * answer, at a 0.3 s model timeout; `waitedMs` counts from the first request, not the start:
   * loading the tokenizer for the budget check comes first.
   */
  async function runBuilt(answer: StubAnswer) {
    const stub = await stubAnswering(answer);
    clearModelEnv();
    vi.stubEnv("OPENAI_BASE_URL", stub.url);
    vi.stubEnv("SELFHEAL_MODEL_RETRIES", "1");
    const result = await createAgent({ sandbox }).invoke(task, { context: { modelTimeoutMs: 300 } });
    return { result, stub, waitedMs: Date.now() - stub.receivedAt[0]! };
  }

  it("ends a run with a built model as model_error naming the base URL, after the timeout on every try", async () => {
    const { result, stub, waitedMs } = await runBuilt({ hang: true });
    expect(result.status).toBe("model_error");
    expect(result.reason).toContain(`The generator model call failed: the server at ${stub.url} timed out after 0.3 s`);
    expect(stub.requests).toHaveLength(2);
    // Two tries of 300 ms each were waited out; the reason says the timeout, not the test's, ended them.
    expect(waitedMs).toBeGreaterThanOrEqual(600);
  });

  it("ends a run as model_error when the server sends headers and then stalls the body", async () => {
    const { result, stub } = await runBuilt({ stallAfterHeaders: true });
    expect(result.status).toBe("model_error");
    expect(result.reason).toContain(`the server at ${stub.url} timed out after 0.3 s`);
  });

  const injectedModel = (url: string, fields: { streaming?: boolean } = {}) =>
    new ChatOpenAI({
      model: "stub-model",
      apiKey: "not-needed",
      maxRetries: 0,
      configuration: { baseURL: url, maxRetries: 0 },
      ...fields,
    });

  /** A run with an injected ChatOpenAI against a stub giving this answer, at a 0.3 s model timeout. */
  async function runInjected(answer: StubAnswer) {
    const stub = await stubAnswering(answer);
    const started = Date.now();
    const result = await createAgent({ model: injectedModel(stub.url), sandbox }).invoke(task, {
      context: { modelTimeoutMs: 300 },
    });
    return { result, elapsedMs: Date.now() - started, requests: stub.requests.length };
  }

  it("bounds an injected ChatOpenAI whose server stalls the body after the headers", async () => {
    const { result } = await runInjected({ stallAfterHeaders: true });
    expect(result.status).toBe("model_error");
    expect(result.reason).toContain("timed out after 0.3 s");
  });

  it("does not cut a reply that keeps arriving, however long it takes in all", async () => {
    // About 8 pieces 100 ms apart: 0.8 s in all, over twice the 0.3 s limit, never idle that long.
    const { result, elapsedMs, requests } = await runInjected({
      trickle: { content: fence("print('ok')"), everyMs: 100 },
    });
    expect(result.status).toBe("passed");
    expect(result.code).toBe("print('ok')\n");
    expect(elapsedMs).toBeGreaterThan(600);
    expect(requests).toBe(1);
  });

  it("bounds a reply that stops arriving midway", async () => {
    const { result } = await runInjected({ trickle: { content: fence("print('ok')"), everyMs: 1_000 } });
    expect(result.status).toBe("model_error");
    expect(result.reason).toContain("timed out after 0.3 s");
  });

  it("finishes with a ChatOpenAI made with streaming: true on a machine with no internet", async () => {
    // LangChain's streaming invoke estimates tokens with ranks it downloads from tiktoken.pages.dev:
    // offline that download never answers, and the call never ends.
    const stub = await stubAnswering({
      content: fence("print('ok')"),
      usage: { prompt_tokens: 9, completion_tokens: 4 },
    });
    const result = await createAgent({ model: injectedModel(stub.url, { streaming: true }), sandbox }).invoke(task, {
      context: { modelTimeoutMs: 2_000 },
    });

    expect(result.status).toBe("passed");
    expect(result.usage.byNode.generator).toMatchObject({ calls: 1, inputTokens: 9, outputTokens: 4 });
  });

  it("takes the default timeout from SELFHEAL_MODEL_TIMEOUT_MS", async () => {
    const stub = await stubAnswering({ hang: true });
    clearModelEnv();
    vi.stubEnv("OPENAI_BASE_URL", stub.url);
    vi.stubEnv("SELFHEAL_MODEL_RETRIES", "0");
    vi.stubEnv("SELFHEAL_MODEL_TIMEOUT_MS", "300");
    expect(parseSettings({}).modelTimeoutMs).toBe(300);

    const result = await createAgent({ sandbox }).invoke(task);
    expect(result.status).toBe("model_error");
    expect(result.reason).toMatch(/timed out after 0\.3 s/);
  });

  it("rejects a timeout outside 100 ms to an hour, in the setting and in SELFHEAL_MODEL_TIMEOUT_MS", () => {
    expect(() => parseSettings({ modelTimeoutMs: 50 })).toThrow(/modelTimeoutMs must be at least 100/);
    expect(() => parseSettings({ modelTimeoutMs: 4_000_000 })).toThrow(/modelTimeoutMs must be at most 3600000/);
    vi.stubEnv("SELFHEAL_MODEL_TIMEOUT_MS", "soon");
    expect(() => parseSettings({})).toThrow(InvalidSettingsError);
    expect(() => parseSettings({})).toThrow(/SELFHEAL_MODEL_TIMEOUT_MS must be a whole number/);
  });

  it("gives an injected ChatOpenAI that has no timeout of its own the timeout per request", async () => {
    const stub = await stubAnswering({ hang: true });
    // Its retries are its own (LangChain's caller retries 6 times by default); one retry here.
    const model = new ChatOpenAI({
      model: "stub-model",
      apiKey: "not-needed",
      maxRetries: 0,
      configuration: { baseURL: stub.url, maxRetries: 1 },
    });
    const result = await createAgent({ model, sandbox }).invoke(task, { context: { modelTimeoutMs: 300 } });

    expect(result.status).toBe("model_error");
    expect(result.reason).toContain(`the server at ${stub.url} timed out after 0.3 s`);
    // Both tries were made: the timeout is per request, so the client's own retry still ran.
    expect(stub.requests).toHaveLength(2);
  });

  it("stops waiting on an injected model that ignores its abort signal", async () => {
    const model = new SilentChatModel({});
    const result = await createAgent({ model, sandbox }).invoke(task, { context: { modelTimeoutMs: 300 } });

    expect(result.status).toBe("model_error");
    expect(result.reason).toBe(
      "The generator model call failed: the model timed out after 0.3 s without an answer: is it overloaded or still loading the model? Raise the limit with modelTimeoutMs, --model-timeout or SELFHEAL_MODEL_TIMEOUT_MS.",
    );
    expect(model.calls).toBe(1);
  });

  it("bounds the LLM review by the same timeout", async () => {
    const stub = await startOpenAIStub((request) =>
      "response_format" in request ? { hang: true } : { content: fence("print('ok')") },
    );
    stubs.push(stub);
    const model = createChatModel(
      "stub-model",
      { temperature: 0, timeoutMs: 300 },
      { OPENAI_BASE_URL: stub.url, SELFHEAL_MODEL_RETRIES: "0" },
    );
    const result = await createAgent({ model, sandbox }).invoke(task, {
      context: { llmReview: true, modelTimeoutMs: 300 },
    });

    expect(result.status).toBe("model_error");
    expect(result.resumeFrom).toBe("critic");
    expect(result.reason).toContain(
      `The critic model call failed (LLM review): the server at ${stub.url} timed out after 0.3 s`,
    );
  });

  it("takes --model-timeout on the command line", async () => {
    const stub = await stubAnswering({ hang: true });
    const dir = mkdtempSync(join(tmpdir(), "selfheal-model-timeout-"));
    try {
      const result = await runCli(
        ["run", "Print ok.", "--model-timeout", "300", "--sandbox", "process", "--db", join(dir, "runs.db")],
        {
          env: { OPENAI_BASE_URL: stub.url, SELFHEAL_MODEL_RETRIES: "0" },
        },
      );
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`the server at ${stub.url} timed out after 0.3 s`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a model server that answers with something other than a chat completion", () => {
  async function reasonFor(answer: StubAnswer): Promise<{ reason: string; url: string }> {
    const stub = await stubAnswering(answer);
    const model = createChatModel(
      "stub-model",
      { temperature: 0 },
      { OPENAI_BASE_URL: stub.url, SELFHEAL_MODEL_RETRIES: "0" },
    );
    const result = await createAgent({ model, sandbox }).invoke(task);
    expect(result.status).toBe("model_error");
    expect(result.reason).not.toMatch(/Cannot read properties/);
    return { reason: result.reason ?? "", url: stub.url };
  }

  it("says an HTML page came back where JSON was expected, and that the base URL may not be the API root", async () => {
    const { reason, url } = await reasonFor({
      raw: { contentType: "text/html", body: "<!DOCTYPE html><html><body>Welcome to the admin panel</body></html>" },
    });
    expect(reason).toBe(
      `The generator model call failed: the server at ${url} answered with an HTML page, not JSON: is OPENAI_BASE_URL the API root (it usually ends in /v1)?`,
    );
  });

  it("says a proxy's 502 page is an HTML page from something in between", async () => {
    const page =
      "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>";
    const { reason, url } = await reasonFor({ raw: { status: 502, contentType: "text/html", body: page } });
    expect(reason).toBe(
      `The generator model call failed: the server at ${url} answered 502 with an HTML page, not JSON: a proxy or gateway in between failed, or OPENAI_BASE_URL is not the API root (it usually ends in /v1).`,
    );
  });

  it("says a reply with an empty choices list holds no answer", async () => {
    const body = JSON.stringify({ id: "x", object: "chat.completion", created: 0, model: "stub-model", choices: [] });
    const { reason, url } = await reasonFor({ raw: { contentType: "application/json", body } });
    expect(reason).toContain(`the server at ${url} answered with an empty "choices" list, so there is no reply`);
  });

  it("quotes a body that is not JSON", async () => {
    const { reason, url } = await reasonFor({ raw: { contentType: "application/json", body: "{not json" } });
    expect(reason).toContain(
      `the server at ${url} answered with "{not json", which is not JSON: is OPENAI_BASE_URL the API root`,
    );
  });

  it("says nothing is listening when the connection is refused", async () => {
    const url = `http://127.0.0.1:${await freePort()}/v1`;
    const model = createChatModel(
      "stub-model",
      { temperature: 0 },
      { OPENAI_BASE_URL: url, SELFHEAL_MODEL_RETRIES: "0" },
    );
    const result = await createAgent({ model, sandbox }).invoke(task);
    expect(result.status).toBe("model_error");
    expect(result.reason).toBe(
      `The generator model call failed: could not connect to the server at ${url} (ECONNREFUSED): the connection was refused, so nothing is listening there: is the server running, and are the host and port in OPENAI_BASE_URL right?`,
    );
  });

  it("names the status, the server's message and what to check for a refused key or an unknown model", async () => {
    const key = await reasonFor({ status: 401, message: "Incorrect API key provided" });
    expect(key.reason).toBe(
      `The generator model call failed: the server at ${key.url} answered 401 (Incorrect API key provided): the API key was refused: check OPENAI_API_KEY.`,
    );
    const model = await reasonFor({ status: 404, message: "model 'gpt-5-turbo' not found" });
    expect(model.reason).toContain(
      `the server at ${model.url} answered 404 (model 'gpt-5-turbo' not found): no such model or path: check the model name`,
    );
  });

  it("still reads a good reply through the inspecting fetch", async () => {
    const stub = await stubAnswering({ content: fence("print('ok')") });
    const model = createChatModel("stub-model", { temperature: 0 }, { OPENAI_BASE_URL: stub.url });
    const result = await createAgent({ model, sandbox }).invoke(task);
    expect(result.status).toBe("passed");
  });
});

describe("no model configured, from code", () => {
  it("ends the run as model_error naming OPENAI_API_KEY, OPENAI_BASE_URL and createAgent({ model })", async () => {
    clearModelEnv();
    const result = await createAgent({ sandbox }).invoke(task, { context: { maxAttempts: 2 } });

    expect(result.status).toBe("model_error");
    expect(result.reason).toMatch(
      /^The generator model call failed: No model is configured\. Set OPENAI_API_KEY .* or OPENAI_BASE_URL /,
    );
    expect(result.reason).toContain("createAgent({ model })");
    expect(result.attempt).toBe(0);
    expect(result.usage.totalTokens).toBe(0);
  });
});

describe("describeModelEndpoint", () => {
  it("names the model and the base URL, OpenAI's when OPENAI_BASE_URL is unset", () => {
    expect(describeModelEndpoint("gpt-4o-mini", {})).toBe("gpt-4o-mini at https://api.openai.com/v1");
    expect(describeModelEndpoint("qwen2.5-coder:7b", { OPENAI_BASE_URL: "http://localhost:11434/v1" })).toBe(
      "qwen2.5-coder:7b at http://localhost:11434/v1",
    );
  });
});
