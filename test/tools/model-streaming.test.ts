import { ChatOpenAI } from "@langchain/openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentState, createAgent, createSandbox } from "../../src/index.js";
import { describeModelFailure } from "../../src/tools/model-errors.js";
import { fence } from "../helpers/helpers.js";
import { type OpenAIStub, startOpenAIStub } from "../helpers/openai-stub.js";

// Studio runs the graph with a token listener (streamMode "messages"), so LangChain asks the
// server for a stream. A server without server-sent events must not end the run as a model error.
describe("a model server that does not stream", () => {
  let stub: OpenAIStub;
  const sandbox = createSandbox({ kind: "process" });
  beforeAll(async () => {
    stub = await startOpenAIStub(() => ({ content: fence("print('hello')") }), { noStreaming: true });
  });
  afterAll(async () => {
    await stub.close();
    await sandbox.close();
  });

  it("is asked again without streaming when a run streams messages, and the run passes", async () => {
    const model = new ChatOpenAI({ model: "stub", apiKey: "not-needed", configuration: { baseURL: stub.url } });
    const agent = createAgent({ model, sandbox });
    let final: AgentState | undefined;
    let messages = 0;
    for await (const [mode, chunk] of await agent.stream(
      { task: "Print hello." },
      { streamMode: ["messages", "values"], context: { maxAttempts: 1 } },
    )) {
      if (mode === "values") final = chunk as AgentState;
      else messages++;
    }
    expect(final).toMatchObject({ status: "passed", attempt: 1 });
    expect(messages).toBeGreaterThan(0);
    expect(stub.requests.map((request) => Boolean(request.stream))).toEqual([true, false]);
  });

  it("is named as such when it cannot be asked again", () => {
    const error = new Error("Received empty response from chat model call.");
    expect(describeModelFailure(error, { endpoint: stub.url, timeoutMs: 1000 })).toBe(
      `the server at ${stub.url} sent no server-sent events for a streaming request: it does not seem to stream (Studio and streamMode "messages" stream model calls). Use a server that streams, or call the model without a token listener.`,
    );
  });
});
