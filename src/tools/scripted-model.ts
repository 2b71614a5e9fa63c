import { BaseChatModel, type BaseChatModelParams } from "@langchain/core/language_models/chat_models";
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";

export type ScriptedReply = string | ((messages: BaseMessage[], call: number) => string);

/**
 * A chat model that answers from a script, for the demo and for tests: no network, no key.
 * It reports no usage, so the ledger counts its tokens with the tokenizer, as for any provider
 * that sends none. Past the end of the script it repeats the last reply.
 */
export class ScriptedChatModel extends BaseChatModel {
  readonly replies: ScriptedReply[];
  /** Every prompt the model received, in order. */
  readonly prompts: BaseMessage[][] = [];

  constructor(replies: ScriptedReply[], params: BaseChatModelParams = {}) {
    super(params);
    if (replies.length === 0) throw new Error("ScriptedChatModel needs at least one reply");
    this.replies = replies;
  }

  _llmType(): string {
    return "scripted";
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const call = this.prompts.length;
    this.prompts.push(messages);
    const reply = this.replies[Math.min(call, this.replies.length - 1)]!;
    const text = typeof reply === "function" ? reply(messages, call) : reply;
    return { generations: [{ text, message: new AIMessage(text) }] };
  }
}
