import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import type { Execution } from "../src/core/state.js";
import { messageText } from "../src/tools/tokens.js";

export const fence = (code: string, language = "python") => `\`\`\`${language}\n${code.trim()}\n\`\`\``;

/** A fake model that answers with these replies in order, each as one AI message. */
export function scriptedModel(...replies: Array<string | ((messages: BaseMessage[]) => string)>) {
  const model = fakeModel();
  for (const reply of replies) {
    model.respond(
      typeof reply === "string" ? new AIMessage(reply) : (messages: BaseMessage[]) => new AIMessage(reply(messages)),
    );
  }
  return model;
}

export const promptText = (messages: BaseMessage[]) => messages.map(messageText).join("\n");

/** A failed execution as the executor would record it, with `fields` laid over it. */
export const failedExecution = (fields: Partial<Execution> = {}): Execution => ({
  status: "error",
  exitCode: 1,
  signal: null,
  stdout: "",
  stderr: "",
  truncated: false,
  durationMs: 1,
  ran: true,
  failedInTests: false,
  progress: null,
  ...fields,
});
