import { type BaseMessage, HumanMessage, SystemMessage } from "@langchain/core/messages";

/**
 * Asks for inputs, not answers: expressions that call what the task asks for, whose values the
 * candidates are compared on. No expected values, so a wrong guess by the model costs nothing
 * but a call that does not tell the candidates apart.
 */
export function buildProposePrompt(args: { task: string; count: number }): BaseMessage[] {
  const system = [
    "You help tell apart several Python programs written for the same task.",
    `Propose up to ${args.count} calls of the function(s) the task asks for, on inputs where a wrong program is likely to differ from a right one: edge cases, boundaries, typical values.`,
    "Reply with one Python expression per line in a single ```python block: calls only, no assert, no expected value, no print, no comments.",
  ].join("\n");
  return [new SystemMessage(system), new HumanMessage(`Task:\n${args.task}`)];
}
