import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { AIMessage, BaseMessage } from "@langchain/core/messages";
import { ChatOpenAI } from "@langchain/openai";
import { InvalidSettingsError, MissingModelConfigError } from "../core/errors.js";
import type { ModelCallUsage } from "../core/ledger.js";
import { modelTimeoutFromEnv } from "../core/settings.js";
import type { PromptTokens } from "./budget.js";
import { idleBoundedFetch, inspectingFetch, isEmptyStreamError } from "./model-errors.js";
import { type ModelCallLog, RecordedChatModel } from "./recorded-model.js";
import { countMessageTokens, countTokens, messageText } from "./tokens.js";

export type ModelRole = "generator" | "fixer" | "strongFixer" | "critic";

/** Chat models a caller injects; `model` serves every role that has none of its own. */
export interface AgentModels {
  model?: BaseChatModel;
  fixerModel?: BaseChatModel;
  strongFixerModel?: BaseChatModel;
  criticModel?: BaseChatModel;
}

export { MissingModelConfigError };

export function hasModelConfig(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.OPENAI_API_KEY || env.OPENAI_BASE_URL);
}

/**
 * Throws unless the environment can build a model: MissingModelConfigError with neither
 * OPENAI_API_KEY nor OPENAI_BASE_URL, InvalidSettingsError for a base URL that is not an http(s)
 * URL. Called before a run starts, so a typo costs one line and no saved run.
 */
export function checkModelConfig(env: NodeJS.ProcessEnv = process.env): void {
  if (!hasModelConfig(env)) throw new MissingModelConfigError();
  const base = env.OPENAI_BASE_URL;
  if (!base) return;
  let protocol: string | undefined;
  try {
    protocol = new URL(base).protocol;
  } catch {
    protocol = undefined;
  }
  if (protocol !== "http:" && protocol !== "https:") {
    throw new InvalidSettingsError(
      `OPENAI_BASE_URL must be an http(s) URL such as http://localhost:11434/v1, got ${JSON.stringify(base)}`,
    );
  }
}

export const DEFAULT_MODEL_RETRIES = 3;

/**
 * How often a failed model request (429, 5xx, timeout, connection refused) is retried,
 * from `SELFHEAL_MODEL_RETRIES`; a bad value is a configuration error, not a silent default.
 */
export function modelRetriesFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.SELFHEAL_MODEL_RETRIES?.trim();
  if (raw === undefined || raw === "") return DEFAULT_MODEL_RETRIES;
  const retries = Number(raw);
  if (!Number.isInteger(retries) || retries < 0 || retries > 10) {
    throw new InvalidSettingsError(`SELFHEAL_MODEL_RETRIES must be a whole number from 0 to 10, got "${raw}"`);
  }
  return retries;
}

/**
 * Builds a ChatOpenAI from the environment. Called only when a node needs a model that was not
 * injected, so importing the graph (as Studio does) never needs a key.
 */
export function createChatModel(
  name: string,
  options: { temperature: number; maxTokens?: number; timeoutMs?: number },
  env: NodeJS.ProcessEnv = process.env,
): BaseChatModel {
  checkModelConfig(env);
  return new ChatOpenAI({
    model: name,
    temperature: options.temperature,
    maxTokens: options.maxTokens,
    // Per HTTP request, enforced by the openai SDK, which retries a timed-out request like a
    // refused one: a hung server costs timeout x (retries + 1) plus the backoff, not forever.
    timeout: options.timeoutMs ?? modelTimeoutFromEnv(env),
    // Local OpenAI-compatible servers ignore the key, but the client refuses to start without one.
    apiKey: env.OPENAI_API_KEY ?? "not-needed",
    // Retries belong to the openai SDK, not LangChain's caller: the SDK retries 408, 409, 429,
    // 5xx and refused connections with exponential backoff (0.5 s, 1 s, 2 s ... with jitter) and
    // honours a server's retry-after. LangChain's caller would re-raise a 429 that has no
    // retry-after at once, and would multiply the SDK's attempts if both retried.
    configuration: {
      ...(env.OPENAI_BASE_URL ? { baseURL: env.OPENAI_BASE_URL } : {}),
      maxRetries: modelRetriesFromEnv(env),
      // An HTML page or a body without choices becomes an error that names the URL. (A body that
      // stalls after the headers is bounded for every call, in withRequestLimits.)
      fetch: inspectingFetch(),
    },
    maxRetries: 0,
  });
}

/** A LangChain chat model that takes its output cap as the `maxTokens` constructor field. */
type CappableModel = BaseChatModel & {
  maxTokens?: number;
  timeout?: number;
  streaming?: boolean;
  defaultOptions?: unknown;
};

/** What bounds one model call: the reply's length, how long a request may wait, the run's signal. */
export interface CallLimits {
  outputCap: number;
  timeoutMs: number;
  signal?: AbortSignal;
}

/**
 * ChatOpenAI (1.5) reads max_tokens / max_completion_tokens / max_output_tokens only from its
 * `maxTokens` field: no call option or `withConfig` key reaches them. So a per-call cap needs a
 * sibling built from the model's own constructor and fields. The model's own class, not an
 * `instanceof ChatOpenAI` check: with two copies of @langchain/openai installed that check fails
 * and the cap would silently go unsent. The same holds for other LangChain models that keep a
 * `maxTokens` field (Anthropic, Groq, Mistral...). Models without one are used as they are: the
 * budget check before the call still holds, only the provider-side cap is missing.
 * A model whose class has a `timeout` field (ChatOpenAI's, per HTTP request) that the caller left
 * unset gets the run's timeout there, so its client's retries keep working; a caller's own wins.
 * `streaming: true` is turned off for our calls: ChatOpenAI's streaming invoke then estimates the
 * tokens with ranks it downloads from tiktoken.pages.dev, which offline never answers. Tokens
 * still stream where someone listens for them (Studio, `streamMode: "messages"`): LangChain
 * streams any model whose run has a token handler.
 */
export function withRequestLimits(
  model: BaseChatModel,
  limits: Pick<CallLimits, "outputCap" | "timeoutMs"> & { disableStreaming?: boolean },
): BaseChatModel {
  // A recorder stays outermost, so it keys and records the call as the limited model makes it.
  if (model instanceof RecordedChatModel)
    return model.limitedTo(model.inner && withRequestLimits(model.inner, limits), limits.outputCap);
  if (!("maxTokens" in model)) return model;
  const Model = model.constructor as new (fields: Record<string, unknown>) => CappableModel;
  const timeout =
    "timeout" in model && (model as CappableModel).timeout === undefined ? { timeout: limits.timeoutMs } : {};
  const capped = new Model({
    ...model.lc_kwargs,
    maxTokens: limits.outputCap,
    ...timeout,
    ...idleBoundedConfiguration(model, (model as CappableModel).timeout ?? limits.timeoutMs),
    ...((model as CappableModel).streaming ? { streaming: false } : {}),
    ...(limits.disableStreaming ? { disableStreaming: true } : {}),
  });
  // ChatOpenAI keeps what withConfig / bindTools bound here, outside its constructor fields.
  const bound = (model as CappableModel).defaultOptions;
  if (bound !== undefined) capped.defaultOptions = bound;
  return capped;
}

/**
 * An OpenAI-client model (ChatOpenAI, Azure) gets its fetch wrapped so that a body that stalls
 * after the headers times out too: its own `timeout` covers the headers only. A fetch the caller
 * configured is kept, inside the wrapper.
 */
function idleBoundedConfiguration(model: BaseChatModel, idleMs: number): { configuration?: Record<string, unknown> } {
  if (!("clientConfig" in model)) return {};
  const configuration = (model.lc_kwargs.configuration ?? {}) as { fetch?: typeof fetch };
  return { configuration: { ...configuration, fetch: idleBoundedFetch(idleMs, configuration.fetch) } };
}

/** True when the model's own client stops a request that takes too long. */
function timesOutPerRequest(model: BaseChatModel): boolean {
  return typeof (model as CappableModel).timeout === "number";
}

/** Settles as the call does, or rejects with the signal's reason, even for a model that ignores it. */
function untilAborted<T>(call: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener("abort", abort, { once: true });
    call.then(resolve, reject).finally(() => signal.removeEventListener("abort", abort));
  });
}

/**
 * Calls `invoke` with the model capped and bounded in time. A model whose client times out each
 * request (ChatOpenAI) does it itself, between its retries; any other model (injected, scripted,
 * another provider) gets a deadline of `timeoutMs` for the whole call, joined to the run's signal,
 * and is no longer waited for once it passes, whether or not it honours the signal.
 */
export async function invokeWithinLimits<T>(
  model: BaseChatModel,
  limits: CallLimits,
  invoke: (model: BaseChatModel, signal: AbortSignal | undefined) => Promise<T>,
): Promise<T> {
  try {
    return await invokeOnce(model, limits, invoke);
  } catch (error) {
    // Someone listens for tokens (Studio, streamMode "messages"), so LangChain asked for a stream,
    // and a server without server-sent events answered with none. Asked again without streaming,
    // such a server answers; the tokens then arrive as one message instead of one by one.
    if (!isEmptyStreamError(error) || limits.signal?.aborted || !("maxTokens" in model)) throw error;
    return invokeOnce(model, { ...limits, disableStreaming: true }, invoke);
  }
}

async function invokeOnce<T>(
  model: BaseChatModel,
  limits: CallLimits & { disableStreaming?: boolean },
  invoke: (model: BaseChatModel, signal: AbortSignal | undefined) => Promise<T>,
): Promise<T> {
  const limited = withRequestLimits(model, limits);
  if (timesOutPerRequest(limited)) return invoke(limited, limits.signal);
  const deadline = AbortSignal.timeout(limits.timeoutMs);
  const signal = limits.signal ? AbortSignal.any([limits.signal, deadline]) : deadline;
  return untilAborted(invoke(limited, signal), signal);
}

export interface ModelReply {
  text: string;
  usage: ModelCallUsage;
  /** True when the provider sent no usage and the numbers come from our tokenizer. */
  estimated: boolean;
  /** True when the provider stopped the reply at the output cap: whatever it holds is incomplete. */
  truncated: boolean;
}

/** OpenAI-compatible servers say `finish_reason: "length"`; Anthropic says `stop_reason: "max_tokens"`. */
function stoppedAtOutputCap(reply: AIMessage): boolean {
  const metadata = reply.response_metadata ?? {};
  return metadata.finish_reason === "length" || metadata.stop_reason === "max_tokens";
}

/**
 * Invokes the model and reports its token use: the provider's numbers, else our own count, which
 * reuses `promptTokens` when the budget plan already counted the prompt.
 */
export async function callModel(
  model: BaseChatModel,
  messages: BaseMessage[],
  node: string,
  limits: CallLimits & { promptTokens?: PromptTokens },
): Promise<ModelReply> {
  const reply = (await invokeWithinLimits(model, limits, (limited, signal) =>
    limited.invoke(messages, { signal }),
  )) as AIMessage;
  const text = messageText(reply);
  const truncated = stoppedAtOutputCap(reply);
  const reported = reply.usage_metadata;
  if (reported && reported.input_tokens + reported.output_tokens > 0) {
    return {
      text,
      usage: { node, inputTokens: reported.input_tokens, outputTokens: reported.output_tokens },
      estimated: false,
      truncated,
    };
  }
  return {
    text,
    usage: {
      node,
      inputTokens: await (limits.promptTokens?.() ?? countMessageTokens(messages)),
      outputTokens: await countTokens(text),
    },
    estimated: true,
    truncated,
  };
}

export interface ModelSettings {
  model: string;
  fixerModel: string | null;
  strongFixerModel: string | null;
  criticModel: string | null;
  temperature: number;
  modelTimeoutMs: number;
}

/** The model name and temperature the settings give a role, whether its model is injected or built. */
function roleModel(role: ModelRole, settings: ModelSettings): { model: string; temperature: number } {
  switch (role) {
    case "generator":
      return { model: settings.model, temperature: settings.temperature };
    case "fixer":
      return { model: settings.fixerModel ?? settings.model, temperature: settings.temperature };
    case "strongFixer":
      return {
        model: settings.strongFixerModel ?? settings.fixerModel ?? settings.model,
        temperature: settings.temperature,
      };
    case "critic":
      return { model: settings.criticModel ?? settings.model, temperature: 0 };
  }
}

/**
 * Resolves the chat model for a role: an injected model first, else one built from the
 * environment by name. Built models are cached, so a run reuses one client per name. With a log of
 * model calls, every model is wrapped to record its calls; when replaying, none is built at all.
 */
export function createModelResolver(injected: AgentModels = {}, calls?: ModelCallLog) {
  const built = new Map<string, BaseChatModel>();
  const build = (name: string, temperature: number, timeoutMs: number) => {
    const key = `${name}@${temperature}@${timeoutMs}`;
    let model = built.get(key);
    if (!model) {
      model = createChatModel(name, { temperature, timeoutMs });
      built.set(key, model);
    }
    return model;
  };
  const resolve = (role: ModelRole, settings: ModelSettings): BaseChatModel => {
    const byName = (name: string, temperature: number) => build(name, temperature, settings.modelTimeoutMs);
    const fallback = injected.model;
    switch (role) {
      case "generator":
        return fallback ?? byName(settings.model, settings.temperature);
      case "fixer":
        return injected.fixerModel ?? fallback ?? byName(settings.fixerModel ?? settings.model, settings.temperature);
      case "strongFixer":
        if (injected.strongFixerModel) return injected.strongFixerModel;
        if (settings.strongFixerModel && !injected.fixerModel && !fallback)
          return byName(settings.strongFixerModel, settings.temperature);
        return resolve("fixer", settings);
      case "critic":
        return injected.criticModel ?? fallback ?? byName(settings.criticModel ?? settings.model, 0);
    }
  };
  if (!calls) return resolve;
  return (role: ModelRole, settings: ModelSettings): BaseChatModel =>
    new RecordedChatModel({
      log: calls,
      ...roleModel(role, settings),
      ...(calls.mode === "record" ? { inner: resolve(role, settings) } : {}),
    });
}
export type ModelResolver = ReturnType<typeof createModelResolver>;
