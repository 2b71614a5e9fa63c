import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface StubRequest {
  model: string;
  messages: Array<{ role: string; content: string }>;
  max_tokens?: number;
  max_completion_tokens?: number;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
}

/**
 * What the stub answers one request with: a reply (with optional usage, after an optional delay),
 * an HTTP error, any raw body (an HTML page, broken JSON, JSON without choices), or nothing ever.
 */
export type StubAnswer =
  | {
      content: string;
      usage?: { prompt_tokens: number; completion_tokens: number };
      delayMs?: number;
      finishReason?: string;
    }
  | { status: number; message?: string }
  | { raw: { status?: number; contentType: string; body: string } }
  | { hang: true }
  /** Sends the status line, headers and the start of a body, then nothing more. */
  | { stallAfterHeaders: true }
  /** A reply sent slowly: a few bytes of the body (or one event of the stream) every `everyMs`. */
  | { trickle: { content: string; everyMs: number } };

export interface OpenAIStub {
  /** Base URL to use as OPENAI_BASE_URL, ending in /v1. */
  url: string;
  port: number;
  requests: StubRequest[];
  /** When each request arrived (Date.now()), in the same order as `requests`. */
  receivedAt: number[];
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
export async function startOpenAIStub(
  answer: (request: StubRequest, index: number) => StubAnswer,
  options: {
    port?: number;
    /** A server that cannot stream: it answers a streaming request with plain JSON, no server-sent events. */
    noStreaming?: boolean;
  } = {},
): Promise<OpenAIStub> {
  const requests: StubRequest[] = [];
  const receivedAt: number[] = [];
  const server: Server = createServer(async (req, res) => {
    if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
      res.writeHead(404).end();
      return;
    }
    const body = JSON.parse(await readBody(req)) as StubRequest;
    // What the client asked is recorded; a server that cannot stream then answers as if it had not.
    const index = requests.push({ ...body }) - 1;
    if (options.noStreaming) body.stream = false;
    receivedAt.push(Date.now());
    const reply = answer(body, index);
    // The request stays open until the client gives up; close() ends it.
    if ("hang" in reply) return;
    if ("trickle" in reply) {
      // A slow server: the JSON completion (or its server-sent events) a few bytes at a time.
      const head = { id: `chatcmpl-stub-${index}`, created: Math.floor(Date.now() / 1000), model: body.model };
      const { content, everyMs } = reply.trickle;
      const pieces = body.stream
        ? [
            ...(content.match(/[\s\S]{1,8}/g) ?? []).map((piece) => ({
              index: 0,
              delta: { content: piece },
              finish_reason: null,
            })),
            { index: 0, delta: {}, finish_reason: "stop" },
          ].map(
            (choice) => `data: ${JSON.stringify({ ...head, object: "chat.completion.chunk", choices: [choice] })}\n\n`,
          )
        : (JSON.stringify({
            ...head,
            object: "chat.completion",
            choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
            usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
          }).match(/[\s\S]{1,40}/g) ?? []);
      if (body.stream) pieces.push("data: [DONE]\n\n");
      res.writeHead(200, { "content-type": body.stream ? "text/event-stream" : "application/json" });
      // The first piece at once, so the headers go out now and only the body is slow.
      res.write(pieces.shift());
      const timer = setInterval(() => {
        const piece = pieces.shift();
        if (piece === undefined) {
          clearInterval(timer);
          res.end();
        } else res.write(piece);
      }, everyMs);
      res.once("close", () => clearInterval(timer));
      return;
    }
    if ("stallAfterHeaders" in reply) {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"id": "chatcmpl-stalled", "choices": [');
      return;
    }
    if ("raw" in reply) {
      res.writeHead(reply.raw.status ?? 200, { "content-type": reply.raw.contentType });
      res.end(reply.raw.body);
      return;
    }
    if ("status" in reply) {
      res.writeHead(reply.status, { "content-type": "application/json" });
      res.end(
        JSON.stringify({ error: { message: reply.message ?? `stub error ${reply.status}`, type: "server_error" } }),
      );
      return;
    }
    if (reply.delayMs) {
      // A client killed mid-request (the crash tests) must not leave a timer holding the server open.
      let clientGone = false;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, reply.delayMs);
        res.once("close", () => {
          clientGone = true;
          clearTimeout(timer);
          resolve();
        });
      });
      if (clientGone) return;
    }
    const usage = reply.usage ?? { prompt_tokens: 0, completion_tokens: 0 };
    const totals = { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
    const head = { id: `chatcmpl-stub-${index}`, created: Math.floor(Date.now() / 1000), model: body.model };
    const finishReason = reply.finishReason ?? "stop";
    if (body.stream) {
      // Server-sent events, as OpenAI streams: the content, then the finish reason, then (when
      // asked for) the usage in a chunk of its own. The LangGraph server streams model calls.
      const event = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
      res.writeHead(200, { "content-type": "text/event-stream" });
      event({
        ...head,
        object: "chat.completion.chunk",
        choices: [{ index: 0, delta: { role: "assistant", content: reply.content }, finish_reason: null }],
      });
      event({
        ...head,
        object: "chat.completion.chunk",
        choices: [{ index: 0, delta: {}, finish_reason: finishReason }],
      });
      if (body.stream_options?.include_usage)
        event({ ...head, object: "chat.completion.chunk", choices: [], usage: totals });
      res.end("data: [DONE]\n\n");
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        ...head,
        object: "chat.completion",
        choices: [{ index: 0, message: { role: "assistant", content: reply.content }, finish_reason: finishReason }],
        usage: totals,
      }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    receivedAt,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
