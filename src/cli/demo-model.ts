import type { BaseMessage } from "@langchain/core/messages";
import { messageText, ScriptedChatModel } from "../internal.js";

/** The model name a demo run records, so `resume` knows to bring the scripted model back. */
export const DEMO_MODEL_NAME = "scripted-demo";

export const DEMO_TASK =
  "Write a Python function calculate_statistics(numbers) that returns a dict with the mean, median and mode " +
  "of a list of numbers, and None for each of them when the list is empty. Check it on [10, 20, 20, 40, 50].";

/** The first draft forgets the empty list, so it really crashes with ZeroDivisionError. */
const DRAFT = `from collections import Counter


def calculate_statistics(numbers):
    """Mean, median and mode of a list of numbers; None for each when the list is empty."""
    ordered = sorted(numbers)
    count = len(ordered)
    mean = sum(ordered) / count
    middle = count // 2
    median = ordered[middle] if count % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    mode = Counter(ordered).most_common(1)[0][0]
    return {"mean": mean, "median": median, "mode": mode}


result = calculate_statistics([10, 20, 20, 40, 50])
print("statistics of [10, 20, 20, 40, 50]:", result)
assert result == {"mean": 28.0, "median": 20, "mode": 20}, result
assert calculate_statistics([]) == {"mean": None, "median": None, "mode": None}
print("all checks passed")
`;

/** The repair is exactly one guard, so the demo shows a fix, not a rewrite. */
const GUARD = `    if not numbers:
        return {"mean": None, "median": None, "mode": None}
`;
export const DEMO_FIXED_CODE = DRAFT.replace(
  "    ordered = sorted(numbers)\n",
  `${GUARD}    ordered = sorted(numbers)\n`,
);

export const DEMO_FIRST_PROGRAM = `\`\`\`python\n${DRAFT}\`\`\``;
export const DEMO_FIXED_PROGRAM =
  "The traceback shows a ZeroDivisionError for the empty list: `sum([]) / 0`. Return None for each statistic before dividing.\n\n" +
  `\`\`\`python\n${DEMO_FIXED_CODE}\`\`\``;

/**
 * The demo's scripted model: it writes the buggy draft, and repairs it only when its prompt carries
 * the real ZeroDivisionError traceback from the sandbox. It answers from the prompt alone, so a
 * resumed or forked demo run gets the same answers as the original.
 */
export function createDemoModel(): ScriptedChatModel {
  return new ScriptedChatModel([
    (messages: BaseMessage[]) =>
      messages.some((message) => messageText(message).includes("ZeroDivisionError"))
        ? DEMO_FIXED_PROGRAM
        : DEMO_FIRST_PROGRAM,
  ]);
}

/** Two lines that fit an 80-column terminal. */
export const DEMO_BANNER =
  "selfheal demo: the model is SCRIPTED (no LLM is called, no API key needed).\n" +
  "Its first program has a real bug: watch it crash, get fixed, and pass.";
