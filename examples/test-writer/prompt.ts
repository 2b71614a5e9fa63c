import { type BaseMessage, HumanMessage, SystemMessage } from "@langchain/core/messages";

/** The test writer sees the task only, never the code: tests written from the code would share its bugs. */
export function buildTestWriterPrompt(task: string, maxTests: number): BaseMessage[] {
  return [
    new SystemMessage(
      [
        "You write acceptance tests for a Python task before anyone has solved it.",
        `Write up to ${maxTests} independent assert statements, one per line, that a correct solution must pass: typical cases, edge cases, and the examples in the task.`,
        "Use only the functions the task names, with the exact signatures it gives. No imports, no helper code.",
        "Reply with the asserts in one fenced ```python block.",
      ].join("\n"),
    ),
    new HumanMessage(`Task:\n${task}`),
  ];
}
