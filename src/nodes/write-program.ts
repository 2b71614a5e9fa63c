import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { BaseMessage } from "@langchain/core/messages";
import { isGraphBubbleUp } from "@langchain/langgraph";
import type { Settings } from "../core/settings.js";
import type { AgentState, AgentUpdate } from "../core/state.js";
import { planPromptCall } from "../tools/budget.js";
import { extractCode } from "../tools/extract-code.js";
import { describeModelFailure, modelEndpoint } from "../tools/model-errors.js";
import { callModel, type ModelReply } from "../tools/models.js";

/**
 * The shared half of the generator and the fixer: check the budget, ask for a program, pull the
 * code out of the reply. Budget and model failures end the run as data, never as a throw.
 */
export async function writeProgram(args: {
  node: string;
  /** Resolved inside, so a model that cannot be built (no key) ends the run as data too. */
  getModel: () => BaseChatModel;
  messages: BaseMessage[];
  state: Pick<AgentState, "usage" | "attempt" | "language" | "task">;
  settings: Settings;
  signal?: AbortSignal;
}): Promise<AgentUpdate> {
  const { node, state, settings } = args;
  const plan = await planPromptCall(args.messages, {
    usedTokens: state.usage.totalTokens,
    tokenBudget: settings.tokenBudget,
    maxOutputTokens: settings.maxOutputTokens,
  });
  if (!plan.ok) return { status: "budget_exhausted", reason: plan.reason };

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
    return { status: "model_error", reason: `The ${node} model call failed: ${reason}`, resumeFrom: node };
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
  if (extraction.code === null) {
    return {
      usage: [reply.usage],
      draft: { author: node, tokens, hasCode: false },
      objections: [{ attempt: state.attempt + 1, source: node, type: "NoCodeError", message: extraction.problem }],
    };
  }
  return {
    usage: [reply.usage],
    code: extraction.code,
    draft: { author: node, tokens, hasCode: true },
    ...(extraction.choice ? { notes: [{ source: node, attempt: state.attempt + 1, message: extraction.choice }] } : {}),
  };
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
