import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { InvalidSettingsError } from "../core/errors.js";
import { messageText } from "./tokens.js";

/** Where a run's model calls are written (`record`) or answered from (`replay`). */
export type ModelCallsMode = { record: string } | { replay: string };

/**
 * What a request is keyed by: what the model is asked and how. Only these fields reach the files:
 * no client, no header, no key, whatever the wrapped model holds.
 */
export interface RecordedRequest {
  /** The model name the run's settings give this role. */
  model: string;
  temperature: number;
  /** The output cap of this call (it shrinks as the budget runs out, so it is part of the request). */
  maxTokens: number | null;
  messages: Array<{ role: string; content: string }>;
}

/** A reply as the nodes read it: the text, the provider's usage, why it stopped. */
export interface RecordedReply {
  content: string;
  usage?: { input_tokens: number; output_tokens: number; total_tokens: number };
  response_metadata?: { finish_reason?: string; stop_reason?: string };
}

/** One file per distinct request: the request itself, for a person to read, and its replies in order. */
interface CallFile {
  key: string;
  request: RecordedRequest;
  replies: RecordedReply[];
}

/** A replayed run asked for a request that was never recorded: the run would no longer be the recorded one. */
export class ModelCallMissError extends Error {
  override name = "ModelCallMissError";
}

export function requestKey(request: RecordedRequest): string {
  return createHash("sha256").update(JSON.stringify(request)).digest("hex").slice(0, 32);
}

function describeRequest(request: RecordedRequest): string {
  const last = request.messages.at(-1)?.content.replace(/\s+/g, " ").trim() ?? "";
  return `${request.model}, ${request.messages.length} message(s), last: "${last.length > 120 ? `${last.slice(0, 119)}…` : last}"`;
}

/**
 * The model calls of one folder. A request asked again (the same prompt at a later attempt) is
 * answered by its next recorded reply, in the order they were recorded, so a replay reproduces
 * the run call for call. Files are written at each call, so a run that dies keeps what it had.
 */
export class ModelCallLog {
  readonly dir: string;
  readonly mode: "record" | "replay";
  /** How often each key has been asked in this log's life. */
  private readonly asked = new Map<string, number>();

  constructor(mode: ModelCallsMode) {
    this.mode = "record" in mode ? "record" : "replay";
    this.dir = resolve("record" in mode ? mode.record : mode.replay);
    if (this.mode === "record") mkdirSync(this.dir, { recursive: true });
    else if (!existsSync(this.dir)) throw new InvalidSettingsError(`no recorded model calls at ${this.dir}`);
  }

  private file(key: string): string {
    return join(this.dir, `${key}.json`);
  }

  private read(key: string): CallFile | undefined {
    const path = this.file(key);
    return existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as CallFile) : undefined;
  }

  /** The recorded reply for this request, or a ModelCallMissError naming it. */
  replay(request: RecordedRequest): RecordedReply {
    const key = requestKey(request);
    const index = this.asked.get(key) ?? 0;
    this.asked.set(key, index + 1);
    const reply = this.read(key)?.replies[index];
    if (!reply) {
      throw new ModelCallMissError(
        `no recorded reply for model request ${key}${index > 0 ? ` (asked ${index + 1} times, recorded fewer)` : ""} in ${this.dir}: ${describeRequest(request)}; ${index > 0 ? "the run asks more than the recorded one did" : this.whyMissed(request)}`,
      );
    }
    return reply;
  }

  /** What the folder holds against what was asked: another model, or the same model asked other things. */
  private whyMissed(request: RecordedRequest): string {
    const models = new Map<string, number>();
    for (const name of readdirSync(this.dir).filter((file) => file.endsWith(".json"))) {
      const model = this.read(name.slice(0, -".json".length))?.request?.model;
      if (typeof model === "string") models.set(model, (models.get(model) ?? 0) + 1);
    }
    if (models.size === 0) return "the folder holds no recorded request";
    if (!models.has(request.model)) {
      const recorded = [...models.keys()].map((model) => JSON.stringify(model)).join(", ");
      return `it was recorded with ${recorded}, and this run asks ${JSON.stringify(request.model)}: replay with the model it was recorded with (--model on the CLI)`;
    }
    return `it holds ${models.get(request.model)} request(s) for ${JSON.stringify(request.model)}, none asking this: the task, a setting or a prompt changed since it was recorded`;
  }

  record(request: RecordedRequest, reply: RecordedReply): void {
    const key = requestKey(request);
    const recorded = this.read(key) ?? { key, request, replies: [] };
    recorded.replies.push(reply);
    // Written aside and renamed, so a reader never sees half a file.
    const temporary = `${this.file(key)}.${process.pid}.tmp`;
    writeFileSync(temporary, `${JSON.stringify(recorded, null, 2)}\n`);
    renameSync(temporary, this.file(key));
  }
}

/** The request a call makes, as the log keys it. */
export function recordedRequest(
  messages: BaseMessage[],
  call: { model: string; temperature: number; maxTokens: number | null },
): RecordedRequest {
  return { ...call, messages: messages.map((message) => ({ role: message.type, content: messageText(message) })) };
}

function replyOf(message: AIMessage): RecordedReply {
  const metadata = message.response_metadata ?? {};
  const stopped = {
    ...(typeof metadata.finish_reason === "string" ? { finish_reason: metadata.finish_reason } : {}),
    ...(typeof metadata.stop_reason === "string" ? { stop_reason: metadata.stop_reason } : {}),
  };
  return {
    content: messageText(message),
    ...(message.usage_metadata
      ? {
          usage: {
            input_tokens: message.usage_metadata.input_tokens,
            output_tokens: message.usage_metadata.output_tokens,
            total_tokens: message.usage_metadata.total_tokens,
          },
        }
      : {}),
    ...(Object.keys(stopped).length > 0 ? { response_metadata: stopped } : {}),
  };
}

export interface RecordedChatModelFields {
  log: ModelCallLog;
  /** The model that answers when recording; never called when replaying (and may be absent). */
  inner?: BaseChatModel;
  /** The model name and temperature the request is keyed by. */
  model: string;
  temperature: number;
  /** This call's output cap, set per call by `limitedTo`. */
  maxTokens?: number | null;
}

/**
 * A wrapper for any chat model that records its calls to a folder, or answers them from one with
 * no model and no network. Requests are keyed by what the model is asked (name, temperature, cap,
 * messages), so a changed prompt is a miss that names the request, never a wrong answer.
 */
export class RecordedChatModel extends BaseChatModel {
  readonly log: ModelCallLog;
  readonly inner?: BaseChatModel;
  readonly modelName: string;
  readonly temperature: number;
  readonly maxTokens: number | null;

  constructor(fields: RecordedChatModelFields) {
    super({});
    this.log = fields.log;
    this.inner = fields.inner;
    this.modelName = fields.model;
    this.temperature = fields.temperature;
    this.maxTokens = fields.maxTokens ?? null;
    if (this.log.mode === "record" && !this.inner) throw new Error("recording model calls needs a model to record");
  }

  _llmType(): string {
    return "recorded";
  }

  /** The wrapped model's own per-request timeout, so the caller bounds the call as it would bound that model's. */
  get timeout(): number | undefined {
    const timeout = (this.inner as { timeout?: unknown } | undefined)?.timeout;
    return typeof timeout === "number" ? timeout : undefined;
  }

  /** The same recorder around a model limited for one call (see withRequestLimits). */
  limitedTo(inner: BaseChatModel | undefined, maxTokens: number): RecordedChatModel {
    return new RecordedChatModel({
      log: this.log,
      inner,
      model: this.modelName,
      temperature: this.temperature,
      maxTokens,
    });
  }

  async _generate(
    messages: BaseMessage[],
    options: this["ParsedCallOptions"],
    _runManager?: CallbackManagerForLLMRun,
  ): Promise<ChatResult> {
    const request = recordedRequest(messages, {
      model: this.modelName,
      temperature: this.temperature,
      maxTokens: this.maxTokens,
    });
    let reply: RecordedReply;
    if (this.log.mode === "replay") reply = this.log.replay(request);
    else {
      // The inner model gets the signal only: this run's callbacks already see the wrapper's call.
      reply = replyOf((await this.inner!.invoke(messages, { signal: options.signal })) as AIMessage);
      this.log.record(request, reply);
    }
    const message = new AIMessage({
      content: reply.content,
      ...(reply.usage ? { usage_metadata: reply.usage } : {}),
      response_metadata: reply.response_metadata ?? {},
    });
    return { generations: [{ text: reply.content, message }] };
  }
}
