import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { AIMessage, BaseMessage } from "@langchain/core/messages";
import { ChatOpenAI } from "@langchain/openai";
import type { ModelCallUsage } from "../graph/state.js";
import { countMessageTokens, countTokens, messageText } from "./tokens.js";

export type ModelRole = "generator" | "fixer" | "strongFixer" | "critic";

/** Chat models a caller injects; `model` serves every role that has none of its own. */
export interface AgentModels {
  model?: BaseChatModel;
  fixerModel?: BaseChatModel;
  strongFixerModel?: BaseChatModel;
  criticModel?: BaseChatModel;
}

export class MissingModelConfigError extends Error {
  override name = "MissingModelConfigError";
  constructor() {
    super(
      "No model is configured. Set OPENAI_API_KEY for OpenAI, or OPENAI_BASE_URL for any OpenAI-compatible server, " +
        "e.g. Ollama: OPENAI_BASE_URL=http://localhost:11434/v1 SELFHEAL_MODEL=qwen2.5-coder:7b. " +
        "Or try `selfheal demo`, which needs neither.",
    );
  }
}

export function hasModelConfig(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.OPENAI_API_KEY || env.OPENAI_BASE_URL);
}

/**
 * Builds a ChatOpenAI from the environment. Called only when a node needs a model that was not
 * injected, so importing the graph (as Studio does) never needs a key.
 */
export function createChatModel(
  name: string,
  options: { temperature: number; maxTokens?: number },
  env: NodeJS.ProcessEnv = process.env,
): BaseChatModel {
  if (!hasModelConfig(env)) throw new MissingModelConfigError();
  return new ChatOpenAI({
    model: name,
    temperature: options.temperature,
    maxTokens: options.maxTokens,
    // Local OpenAI-compatible servers ignore the key, but the client refuses to start without one.
    apiKey: env.OPENAI_API_KEY ?? "not-needed",
    configuration: env.OPENAI_BASE_URL ? { baseURL: env.OPENAI_BASE_URL } : undefined,
    maxRetries: 3,
  });
}

/**
 * ChatOpenAI fixes max_tokens at construction, so a per-call output cap needs a sibling
 * built from the same fields. Other models are used as they are: the budget check before
 * the call still holds, only the provider-side cap is missing.
 */
export function withOutputCap(model: BaseChatModel, maxTokens: number): BaseChatModel {
  if (model instanceof ChatOpenAI) {
    return new ChatOpenAI({ ...(model.lc_kwargs as ConstructorParameters<typeof ChatOpenAI>[0]), maxTokens });
  }
  return model;
}

export interface ModelReply {
  text: string;
  usage: ModelCallUsage;
  /** True when the provider sent no usage and the numbers come from our tokenizer. */
  estimated: boolean;
}

/** Invokes the model and reports its token use: the provider's numbers, else our own count. */
export async function callModel(
  model: BaseChatModel,
  messages: BaseMessage[],
  node: string,
  options: { outputCap: number; signal?: AbortSignal },
): Promise<ModelReply> {
  const reply = (await withOutputCap(model, options.outputCap).invoke(messages, { signal: options.signal })) as AIMessage;
  const text = messageText(reply);
  const reported = reply.usage_metadata;
  if (reported && reported.input_tokens + reported.output_tokens > 0) {
    return {
      text,
      usage: { node, inputTokens: reported.input_tokens, outputTokens: reported.output_tokens },
      estimated: false,
    };
  }
  return {
    text,
    usage: { node, inputTokens: await countMessageTokens(messages), outputTokens: await countTokens(text) },
    estimated: true,
  };
}

export interface ModelSettings {
  model: string;
  fixerModel: string | null;
  strongFixerModel: string | null;
  criticModel: string | null;
  temperature: number;
}

/**
 * Resolves the chat model for a role: an injected model first, else one built from the
 * environment by name. Built models are cached, so a run reuses one client per name.
 */
export function createModelResolver(injected: AgentModels = {}) {
  const built = new Map<string, BaseChatModel>();
  const byName = (name: string, temperature: number) => {
    const key = `${name}@${temperature}`;
    let model = built.get(key);
    if (!model) built.set(key, (model = createChatModel(name, { temperature })));
    return model;
  };
  const resolve = (role: ModelRole, settings: ModelSettings): BaseChatModel => {
    const fallback = injected.model;
    switch (role) {
      case "generator":
        return fallback ?? byName(settings.model, settings.temperature);
      case "fixer":
        return injected.fixerModel ?? fallback ?? byName(settings.fixerModel ?? settings.model, settings.temperature);
      case "strongFixer":
        if (injected.strongFixerModel) return injected.strongFixerModel;
        if (settings.strongFixerModel && !injected.fixerModel && !fallback) return byName(settings.strongFixerModel, settings.temperature);
        return resolve("fixer", settings);
      case "critic":
        return injected.criticModel ?? fallback ?? byName(settings.criticModel ?? settings.model, 0);
    }
  };
  return resolve;
}
export type ModelResolver = ReturnType<typeof createModelResolver>;
