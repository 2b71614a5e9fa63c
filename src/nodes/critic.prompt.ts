import { type BaseMessage, HumanMessage, SystemMessage } from "@langchain/core/messages";
import { z } from "zod";
import type { Execution } from "../core/state.js";
import type { Language } from "../sandbox/types.js";
import { tail } from "./prompt-parts.js";

export const ReviewSchema = z.object({
  passed: z.boolean().describe("true when the program does what the task asks"),
  reasons: z.array(z.string()).describe("short reasons for the verdict"),
  fixHint: z.string().describe("what to change when it does not pass; empty when it passes"),
});
export type Review = z.infer<typeof ReviewSchema>;

export function buildReviewPrompt(args: {
  task: string;
  language: Language;
  code: string;
  run: Execution;
}): BaseMessage[] {
  return [
    new SystemMessage(
      "You review a program that ran without errors. Decide whether it really does what the task asks, judging from the code and its output. Fail it only for a concrete defect you can name.",
    ),
    new HumanMessage(
      [
        `Task:\n${args.task}`,
        `Program:\n\`\`\`${args.language}\n${args.code.trimEnd()}\n\`\`\``,
        `Its output (tail):\n${tail(args.run.stdout, 1500) || "(nothing)"}`,
      ].join("\n\n"),
    ),
  ];
}
