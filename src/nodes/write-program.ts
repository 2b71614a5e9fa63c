import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { BaseMessage } from "@langchain/core/messages";
import { isGraphBubbleUp } from "@langchain/langgraph";
import type { ModelCallUsage } from "../core/ledger.js";
import type { Settings } from "../core/settings.js";
import type { AgentState, AgentUpdate } from "../core/state.js";
import { planPromptCall } from "../tools/budget.js";
import { extractCode } from "../tools/extract-code.js";
import { describeModelFailure, modelEndpoint } from "../tools/model-errors.js";
import { callModel, type ModelReply } from "../tools/models.js";

/**
 * What a writer's model call came to: a program, a reply with no program in it (and why), or a
 * stop that ends the run as data (the budget, a failed model call, an input file that cannot be used). Each writer turns it into what
 * it returns: the generator and the fixer a state update (`writtenUpdate`), a candidate its outcome.
 */
export type Written =
  | { kind: "code"; code: string; usage: ModelCallUsage; tokens: number; note?: string }
  | { kind: "noCode"; usage: ModelCallUsage; tokens: number; problem: string }
  | { kind: "stop"; status: "budget_exhausted" | "model_error" | "invalid_input"; reason: string; resumeFrom?: string };

/**
 * The shared half of every writer: check the budget, ask for a program, pull the code out of the
 * reply. Budget and model failures end the run as data, never as a throw.
 */
export async function writeProgram(args: {
  node: string;
  /** Resolved inside, so a model that cannot be built (no key) ends the run as data too. */
  getModel: () => BaseChatModel;
  messages: BaseMessage[];
  state: Pick<AgentState, "usage" | "language" | "task">;
  settings: Settings;
  signal?: AbortSignal;
}): Promise<Written> {
  const { node, state, settings } = args;
  const plan = await planPromptCall(args.messages, {
    usedTokens: state.usage.totalTokens,
    tokenBudget: settings.tokenBudget,
    maxOutputTokens: settings.maxOutputTokens,
  });
  if (!plan.ok) return { kind: "stop", status: "budget_exhausted", reason: plan.reason };

  let reply: ModelReply;
  let model: BaseChatModel | undefined;
  try {
    model = args.getModel();
    reply = await callModel(model, args.messages, node, {
      outputCap: plan.outputCap,
      timeoutMs: settings.modelTimeoutMs,
      signal: args.signal,
      promptTokens: plan.promptTokens,
    });
  } catch (error) {
    if (isGraphBubbleUp(error)) throw error;
    const reason = describeModelFailure(error, { endpoint: modelEndpoint(model), timeoutMs: settings.modelTimeoutMs });
    return {
      kind: "stop",
      status: "model_error",
      reason: `The ${node} model call failed: ${reason}`,
      resumeFrom: node,
    };
  }

  const tokens = reply.usage.inputTokens + reply.usage.outputTokens;
  // A reply cut off at the output cap may still hold an unclosed fence that would parse as code;
  // running half a program teaches the fixer nothing, so it counts as a reply with no program.
  const extraction = reply.truncated
    ? {
        code: null,
        problem: `The reply was cut off at the output cap of ${plan.outputCap} tokens before the program was complete. Reply with a shorter, complete program in one fenced block.`,
      }
    : extractCode(reply.text, state.language, namesInTask(state.task));
  if (extraction.code === null) return { kind: "noCode", usage: reply.usage, tokens, problem: extraction.problem };
  return {
    kind: "code",
    code: extraction.code,
    usage: reply.usage,
    tokens,
    ...(extraction.choice ? { note: extraction.choice } : {}),
  };
}

/** The generator's and the fixer's update for what their call came to, as attempt `attempt`'s program. */
export function writtenUpdate(node: string, written: Written, attempt: number): AgentUpdate {
  switch (written.kind) {
    case "stop":
      return {
        status: written.status,
        reason: written.reason,
        ...(written.resumeFrom ? { resumeFrom: written.resumeFrom } : {}),
      };
    case "noCode":
      return {
        usage: [written.usage],
        draft: { author: node, tokens: written.tokens, hasCode: false },
        objections: [{ attempt, source: node, type: "NoCodeError", message: written.problem }],
      };
    case "code":
      return {
        usage: [written.usage],
        code: written.code,
        draft: { author: node, tokens: written.tokens, hasCode: true },
        ...(written.note ? { notes: [{ source: node, attempt, message: written.note }] } : {}),
      };
  }
}

/** `def name(`, `class Name`, `function name(`, \`name\` and `name(` in a task's text. */
const TASK_NAME_PATTERNS = [
  /\b(?:def|class|function)\s+([A-Za-z_$][\w$]*)/g,
  /`([A-Za-z_$][\w$]*)(?:\([^`]*\))?`/g,
  /(?<![\w$.])([A-Za-z_$][\w$]*)\(/g,
];

/**
 * The function and class names a task defines or mentions: among a reply's worked examples, the
 * block that defines them is the answer. A name no block defines costs nothing, so a stray call
 * in the prose (`print(`) does no harm.
 */
export function namesInTask(task: string): string[] {
  const names = new Set<string>();
  for (const pattern of TASK_NAME_PATTERNS) for (const match of task.matchAll(pattern)) names.add(match[1] as string);
  return [...names];
}
