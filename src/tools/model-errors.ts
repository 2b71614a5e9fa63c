import { MissingModelConfigError } from "../core/errors.js";

/** Where the openai SDK sends requests when neither the model nor OPENAI_BASE_URL says otherwise. */
export const OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1";

/** The base URL a model built from this environment talks to, without any user:password in it (it is shown). */
export function modelBaseURL(env: NodeJS.ProcessEnv = process.env): string {
  return withoutCredentials(env.OPENAI_BASE_URL?.trim() || OPENAI_DEFAULT_BASE_URL);
}

function withoutCredentials(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.username && !parsed.password) return url;
    parsed.username = "";
    parsed.password = "";
    return parsed.href.replace(/\/$/, "");
  } catch {
    return url;
  }
}

/** "gpt-4o-mini at https://api.openai.com/v1": what a person is waiting on, for the CLI to show. */
export function describeModelEndpoint(model: string, env: NodeJS.ProcessEnv = process.env): string {
  return `${model} at ${modelBaseURL(env)}`;
}

/**
 * The base URL of an OpenAI-compatible LangChain model (ChatOpenAI keeps its client settings in
 * `clientConfig`), read by shape so any copy of @langchain/openai works; undefined for models
 * that are not HTTP clients we know (scripted models, other providers).
 */
export function modelEndpoint(model: unknown, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (typeof model !== "object" || model === null || !("clientConfig" in model)) return undefined;
  const config = (model as { clientConfig?: { baseURL?: unknown } }).clientConfig;
  return typeof config?.baseURL === "string" && config.baseURL ? config.baseURL : modelBaseURL(env);
}

/**
 * A reply that arrived with HTTP 200 but is no chat completion: an HTML page, plain text, broken
 * JSON, or JSON without choices. The openai SDK would hand such a body to LangChain, which then
 * fails with "Cannot read properties of undefined"; this names the URL and the likely cause instead.
 */
export class ModelReplyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ModelReplyError";
  }
}

const LIKELY_WRONG_ROOT = "is OPENAI_BASE_URL the API root (it usually ends in /v1)?";

function looksLikeHtml(contentType: string, body: string): boolean {
  return contentType.includes("html") || /^\s*<(!doctype|html|head|body)/i.test(body);
}

function excerpt(body: string): string {
  const line = body.replace(/\s+/g, " ").trim();
  return line.length > 120 ? `${line.slice(0, 120)}...` : line;
}

/** Why a 200 body from `url` is not a chat completion, or undefined when it is one. */
export function inspectReplyBody(url: string, contentType: string, body: string): string | undefined {
  const server = `the server at ${url}`;
  if (looksLikeHtml(contentType, body)) return `${server} answered with an HTML page, not JSON: ${LIKELY_WRONG_ROOT}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    const what = body.trim() ? `"${excerpt(body)}"` : "an empty body";
    return `${server} answered with ${what}, which is not JSON: ${LIKELY_WRONG_ROOT} Is it an OpenAI-compatible server?`;
  }
  if (typeof parsed !== "object" || parsed === null)
    return `${server} answered with JSON that is not a chat completion: ${LIKELY_WRONG_ROOT}`;
  const reply = parsed as { choices?: unknown; error?: { message?: unknown } };
  if (reply.error) {
    const message = typeof reply.error.message === "string" ? reply.error.message : JSON.stringify(reply.error);
    return `${server} answered 200 with an error instead of a reply: ${message}`;
  }
  if (!Array.isArray(reply.choices))
    return `${server} answered with JSON that has no "choices": ${LIKELY_WRONG_ROOT} Is it an OpenAI-compatible server?`;
  if (reply.choices.length === 0) {
    return `${server} answered with an empty "choices" list, so there is no reply: the server may have filtered the answer or failed to run the model; its logs should say which.`;
  }
  return undefined;
}

/**
 * A fetch for the openai SDK that looks at each successful chat completion before the SDK does, and
 * throws a ModelReplyError for a body that is not one. Streams pass through untouched. The SDK
 * treats the throw as a failed connection and retries it like one, then wraps it as the cause.
 */
export function inspectingFetch(baseFetch: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const response = await baseFetch(input, init);
    const contentType = response.headers.get("content-type") ?? "";
    if (!response.ok || contentType.includes("text/event-stream")) return response;
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    if (!/\/chat\/completions(\?|$)/.test(url)) return response;
    const problem = inspectReplyBody(
      url.replace(/\/chat\/completions(\?.*)?$/, ""),
      contentType,
      await response.clone().text(),
    );
    if (problem) throw new ModelReplyError(problem);
    return response;
  };
}

/**
 * A fetch whose response body fails with a TimeoutError when no byte arrives for `idleMs`. The
 * openai SDK's `timeout` stops waiting for the headers only: a server that sends them and then
 * stalls (a proxy holding the body, a stream that stops mid-reply) would hold the run forever.
 * An idle bound, not a total one, so a long reply that keeps streaming is never cut.
 */
export function idleBoundedFetch(idleMs: number, baseFetch: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const response = await baseFetch(input, init);
    if (response.body === null) return response;
    let timer: NodeJS.Timeout | undefined;
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        start(controller) {
          const stall = () =>
            controller.error(new DOMException(`no data from the server for ${seconds(idleMs)}`, "TimeoutError"));
          timer = setTimeout(stall, idleMs);
        },
        transform(chunk, controller) {
          timer?.refresh();
          controller.enqueue(chunk);
        },
        flush() {
          clearTimeout(timer);
        },
      }),
    );
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

/** The error and its causes, outermost first: the openai SDK and LangChain wrap what went wrong. */
function causeChain(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (
    let current = error;
    current !== undefined && chain.length < 8;
    current = (current as { cause?: unknown })?.cause
  ) {
    chain.push(current);
    if (typeof current !== "object" || current === null) break;
  }
  return chain;
}

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}

const CONNECTION_CAUSES: Record<string, string> = {
  ECONNREFUSED:
    "the connection was refused, so nothing is listening there: is the server running, and are the host and port in OPENAI_BASE_URL right?",
  ENOTFOUND: "the host name was not found: check the host in OPENAI_BASE_URL.",
  EAI_AGAIN: "the host name could not be resolved (DNS): check the network and the host in OPENAI_BASE_URL.",
  ECONNRESET: "the server closed the connection: a proxy or the server dropped it; check its logs.",
  EHOSTUNREACH: "the host is unreachable: check the network and the host in OPENAI_BASE_URL.",
  ECONNABORTED: "the connection was aborted: check the network.",
  CERT_HAS_EXPIRED: "its TLS certificate has expired.",
  DEPTH_ZERO_SELF_SIGNED_CERT:
    "its TLS certificate is self-signed: use http:// for a local server, or trust the certificate (NODE_EXTRA_CA_CERTS).",
};

/** What an HTTP error status most likely means for someone pointing selfheal at a server. */
function statusCause(status: number): string {
  if (status === 401 || status === 403) return "the API key was refused: check OPENAI_API_KEY.";
  if (status === 404)
    return "no such model or path: check the model name (--model, SELFHEAL_MODEL) and that OPENAI_BASE_URL is the API root (it usually ends in /v1).";
  if (status === 429) return "rate limited or out of quota, still after the retries (SELFHEAL_MODEL_RETRIES).";
  if (status >= 500)
    return "the server failed, still after the retries (SELFHEAL_MODEL_RETRIES); its logs should say why.";
  return "the server rejected the request.";
}

export interface ModelFailureContext {
  /** The model's base URL, when it is an HTTP client we can read it from. */
  endpoint?: string;
  /** The per-request timeout the call ran with. */
  timeoutMs: number;
}

/**
 * One sentence for a failed model call: where it went, what happened and what to check. Every
 * node that calls a model builds its `reason` from this, so the same fault reads the same everywhere.
 */
/** LangChain's error for a streamed call that produced no chunk at all. */
export function isEmptyStreamError(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith("Received empty response from chat model call");
}

export function describeModelFailure(error: unknown, context: ModelFailureContext): string {
  const server = context.endpoint ? `the server at ${context.endpoint}` : "the model";
  const chain = causeChain(error);
  const errors = chain.filter(
    (link): link is Error & { code?: unknown; status?: unknown; headers?: unknown } => link instanceof Error,
  );

  const missing = errors.find((link) => link instanceof MissingModelConfigError);
  if (missing) return `${missing.message} From code, inject a chat model instead: createAgent({ model }).`;

  const reply = errors.find((link) => link instanceof ModelReplyError || link.name === "ModelReplyError");
  if (reply) return reply.message;

  // The openai SDK refuses to build its client without a key, even for a server that needs none.
  if (errors.some((link) => /Missing credentials|API key (not found|is missing)/i.test(link.message))) {
    const client = context.endpoint ? `the OpenAI client for ${context.endpoint}` : "the model's client";
    return `${client} will not start without an API key: set OPENAI_API_KEY (any value, e.g. "not-needed", for a server that needs none), or pass apiKey to the model.`;
  }

  // LangChain streams a call when someone listens for tokens (Studio does); a server without
  // server-sent events then yields no chunk. A model that could not be asked again lands here.
  if (errors.some(isEmptyStreamError)) {
    return `${server} sent no server-sent events for a streaming request: it does not seem to stream (Studio and streamMode "messages" stream model calls). Use a server that streams, or call the model without a token listener.`;
  }

  const http = errors.find((link) => typeof link.status === "number");
  if (http) {
    const status = http.status as number;
    const headers = http.headers as { get?: (name: string) => string | null } | undefined;
    const contentType = typeof headers?.get === "function" ? (headers.get("content-type") ?? "") : "";
    // The SDK's message is the status and the server's own message (the whole body for a page that
    // is not JSON); LangChain appends a troubleshooting link that belongs in no one-line reason.
    const said = http.message
      .replace(/\s*Troubleshooting URL:[\s\S]*$/, "")
      .replace(/^\d+\s*/, "")
      .trim();
    if (looksLikeHtml(contentType, said)) {
      return `${server} answered ${status} with an HTML page, not JSON: a proxy or gateway in between failed, or OPENAI_BASE_URL is not the API root (it usually ends in /v1).`;
    }
    return `${server} answered ${status}${said ? ` (${excerpt(said)})` : ""}: ${statusCause(status)}`;
  }

  if (errors.some((link) => link.name === "TimeoutError" || /timed? ?out/i.test(link.message))) {
    return `${server} timed out after ${seconds(context.timeoutMs)} without an answer: is it overloaded or still loading the model? Raise the limit with modelTimeoutMs, --model-timeout or SELFHEAL_MODEL_TIMEOUT_MS.`;
  }

  const code = errors
    .map((link) => link.code)
    .find((value): value is string => typeof value === "string" && value in CONNECTION_CAUSES);
  if (code) return `could not connect to ${server} (${code}): ${CONNECTION_CAUSES[code]}`;

  const first = errors[0];
  if (first?.name === "AbortError")
    return `the ${context.endpoint ? `request to ${context.endpoint}` : "model call"} was cancelled.`;
  if (first instanceof SyntaxError)
    return `${server} sent a reply that is not valid JSON (${first.message}): is it an OpenAI-compatible server?`;
  if (first instanceof TypeError && /Cannot read properties of (undefined|null)/.test(first.message)) {
    return `${server} sent a reply the client could not read as a chat completion (${first.message}): is it an OpenAI-compatible server, and is OPENAI_BASE_URL the API root (it usually ends in /v1)?`;
  }
  if (first?.constructor.name === "APIConnectionError" || first?.message === "Connection error.") {
    const deepest = errors.at(-1);
    return `could not connect to ${server}${deepest && deepest !== first ? ` (${deepest.message})` : ""}: is the server running, and is OPENAI_BASE_URL right?`;
  }
  return describeError(error);
}

/** An error as one line: its class, its message, and its cause's message. */
export function describeError(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
    return `${error.name}: ${error.message}${cause}`;
  }
  return String(error);
}
