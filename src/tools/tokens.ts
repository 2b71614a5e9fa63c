import type { BaseMessage } from "@langchain/core/messages";
import { Tiktoken } from "js-tiktoken/lite";

let encoder: Tiktoken | undefined;

/**
 * o200k_base is the tokenizer of the gpt-4o family, the default model. For other models it is an
 * estimate within a few percent, far closer than chars/4. The rank table is several MB, so it is
 * loaded on first use rather than at import.
 */
async function loadEncoder(): Promise<Tiktoken> {
  if (!encoder) {
    const { default: ranks } = await import("js-tiktoken/ranks/o200k_base");
    encoder = new Tiktoken(ranks);
  }
  return encoder;
}

export async function countTokens(text: string): Promise<number> {
  return (await loadEncoder()).encode(text, [], []).length;
}

/** Chat formats add a few tokens per message for roles and separators (OpenAI's cookbook uses 3, plus 3 per reply). */
export const TOKENS_PER_MESSAGE = 3;
export const TOKENS_PER_REPLY = 3;

export function messageText(message: BaseMessage): string {
  return typeof message.content === "string" ? message.content : JSON.stringify(message.content);
}

export async function countMessageTokens(messages: BaseMessage[]): Promise<number> {
  let total = TOKENS_PER_REPLY;
  for (const message of messages) total += TOKENS_PER_MESSAGE + (await countTokens(messageText(message)));
  return total;
}
