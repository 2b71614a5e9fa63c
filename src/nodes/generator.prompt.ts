import { type BaseMessage, HumanMessage, SystemMessage } from "@langchain/core/messages";
import type { AllowHostInput } from "../core/allowlist.js";
import type { Language } from "../sandbox/types.js";
import { LANGUAGE_NAMES, networkSection } from "./prompt-parts.js";

export function systemPrompt(language: Language, network = false): string {
  return [
    `You are an expert ${LANGUAGE_NAMES[language]} programmer. You write one complete program that solves the task.`,
    `Reply with the whole program in a single fenced \`\`\`${language} block.`,
    "Where the task allows, the program checks itself: it ends with assertions or printed checks that exercise it on the task's examples and edge cases, so a wrong result fails loudly.",
    network
      ? "Use only the standard library. Do not read from stdin or files you did not create; reach only the hosts the task's network section lists."
      : "Use only the standard library. Do not read from stdin, the network or files you did not create.",
    "Keep every function and class name exactly as the task gives it: acceptance tests may call them after your program runs.",
  ].join("\n");
}

export interface RewriteContext {
  /** The error that kept coming back, one line. */
  repeatedError: string;
  /** One line per distinct error seen so far. */
  earlierErrors: string[];
}

export function buildGeneratorPrompt(args: {
  task: string;
  language: Language;
  rewrite?: RewriteContext;
  /** The input files and the out/ folder of a data task (describeDataFiles). */
  dataFiles?: string;
  /** The hosts the program may reach (the `allowHosts` setting). */
  allowHosts?: readonly AllowHostInput[];
}): BaseMessage[] {
  const parts = [`Task:\n${args.task}`];
  if (args.dataFiles) parts.push(args.dataFiles);
  const network = networkSection(args.language, args.allowHosts ?? []);
  if (network) parts.push(network);
  if (args.rewrite) {
    parts.push(
      `Earlier attempts kept failing the same way and repairs did not help:\n${args.rewrite.repeatedError}`,
      `All errors seen so far:\n${args.rewrite.earlierErrors.map((line) => `- ${line}`).join("\n")}`,
      "Start over with a different approach: do not repeat the one that failed.",
    );
  }
  return [new SystemMessage(systemPrompt(args.language, network !== null)), new HumanMessage(parts.join("\n\n"))];
}
