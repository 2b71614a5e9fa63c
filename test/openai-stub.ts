import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface StubRequest {
  model: string;
  messages: Array<{ role: string; content: string }>;
  max_tokens?: number;
  max_completion_tokens?: number;
  stream?: boolean;
}

/** What the stub answers one request with: a reply (with optional usage), an HTTP error, or a delay first. */
export type StubAnswer =
  | { content: string; usage?: { prompt_tokens: number; completion_tokens: number }; delayMs?: number; finishReason?: string }
  | { status: number; message?: string };

export interface OpenAIStub {
  /** Base URL to use as OPENAI_BASE_URL, ending in /v1. */
  url: string;
  requests: StubRequest[];
  close(): Promise<void>;
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * A local OpenAI-compatible chat completions server: the real ChatOpenAI client talks to it over
 * HTTP, so tests exercise the same path as a real provider, with scripted answers.
 */
export async function startOpenAIStub(answer: (request: StubRequest, index: number) => StubAnswer): Promise<OpenAIStub> {
  const requests: StubRequest[] = [];
  const server: Server = createServer(async (req, res) => {
    if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
      res.writeHead(404).end();
      return;
    }
    const body = JSON.parse(await readBody(req)) as StubRequest;
    const index = requests.push(body) - 1;
    const reply = answer(body, index);
    if ("status" in reply) {
      res.writeHead(reply.status, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: reply.message ?? `stub error ${reply.status}`, type: "server_error" } }));
      return;
    }
    if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
    const usage = reply.usage ?? { prompt_tokens: 0, completion_tokens: 0 };
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        id: `chatcmpl-stub-${index}`,
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        choices: [{ index: 0, message: { role: "assistant", content: reply.content }, finish_reason: reply.finishReason ?? "stop" }],
        usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
