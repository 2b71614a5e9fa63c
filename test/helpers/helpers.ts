import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import type { ArtifactFile, Execution } from "../../src/internal.js";
import { messageText } from "../../src/tools/tokens.js";
import { recordingFailures } from "./callback-failures.js";

export const fence = (code: string, language = "python") => `\`\`\`${language}\n${code.trim()}\n\`\`\``;

/**
 * A fake model that answers with these replies in order, each as one AI message. A reply function
 * may assert on the prompt: what it throws fails the test with its own message (callback-failures.ts),
 * not only as the `model_error` the node makes of it.
 */
export function scriptedModel(...replies: Array<string | ((messages: BaseMessage[]) => string)>) {
  const model = fakeModel();
  for (const reply of replies) {
    if (typeof reply === "string") model.respond(new AIMessage(reply));
    else model.respond(recordingFailures((messages: BaseMessage[]) => new AIMessage(reply(messages))));
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

/** A clean execution that left these files under out/ (collected into `folder`, or not kept). */
export function ranWithArtifacts(
  files: ArtifactFile[],
  problems: string[] = [],
  folder: string | null = null,
): Execution {
  return failedExecution({ status: "ok", exitCode: 0, artifacts: { folder, problems, files } });
}
