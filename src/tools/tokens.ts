import type { BaseMessage } from "@langchain/core/messages";

type CountTokens = (text: string, options: { disallowedSpecial: Set<string> }) => number;

let counter: CountTokens | undefined;

/**
 * o200k_base is the tokenizer of the gpt-4o family, the default model. For other models it is an
 * estimate within a few percent, far closer than chars/4. gpt-tokenizer counts the same tokens as
 * js-tiktoken about ten times faster; its rank table is large, so it is loaded on first use.
 */
async function loadCounter(): Promise<CountTokens> {
  counter ??= (await import("gpt-tokenizer/encoding/o200k_base")).countTokens as CountTokens;
  return counter;
}

/** Special tokens such as <|endoftext|> in a program's output are text here, not markers. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

/**
 * Byte-pair merging is quadratic in the length of one unbroken piece: a program that prints 100 000
 * characters without a space took js-tiktoken minutes. Text is counted in pieces of at most this
 * many characters, cut after a newline where there is one, which the tokenizer splits at anyway.
 */
export const COUNT_PIECE_CHARS = 4096;

export async function countTokens(text: string): Promise<number> {
  const count = await loadCounter();
  if (text.length <= COUNT_PIECE_CHARS) return count(text, AS_TEXT);
  let total = 0;
  for (let start = 0; start < text.length; ) {
    let end = Math.min(start + COUNT_PIECE_CHARS, text.length);
    if (end < text.length) {
      const newline = text.lastIndexOf("\n", end - 1);
      if (newline > start) end = newline + 1;
    }
    total += count(text.slice(start, end), AS_TEXT);
    start = end;
  }
  return total;
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
