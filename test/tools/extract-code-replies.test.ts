import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { createAgent, createSandbox } from "../../src/index.js";
import { namesInTask } from "../../src/nodes/write-program.js";
import { extractCode } from "../../src/tools/extract-code.js";
import { fence, scriptedModel } from "../helpers/helpers.js";

/**
 * Replies shaped like the ones real models wrote on HumanEval in the "analogical" prompting style
 * (work one to three similar problems, each in its own block, often indented under a list item,
 * then answer), and the other multi-block shapes seen there. Each case is judged the way the
 * benchmark judges: the extracted program, then the task's hidden check, run by python3.
 */
interface ReplyCase {
  name: string;
  task: string;
  reply: string;
  check: string;
  /** The block the note should name: `block N of M`. */
  chosen?: string;
}

const BELOW_ZERO_TASK = `from typing import List

def below_zero(operations: List[int]) -> bool:
    """Given deposits and withdrawals starting from zero, return True if the balance ever falls
    below zero.
    >>> below_zero([1, 2, -4, 5])
    True
    """
`;
const BELOW_ZERO_CHECK =
  "assert below_zero([1, 2, -4, 5])\nassert not below_zero([1, 2, 3])\nassert not below_zero([])\n";

const BELOW_ZERO_CODE = `def below_zero(operations):
    balance = 0
    for op in operations:
        balance += op
        if balance < 0:
            return True
    return False`;
const BELOW_ZERO_ANSWER = fence(BELOW_ZERO_CODE);

/** A block as a model nests it under a list item: every line indented by four spaces. */
const underListItem = (block: string) => block.replace(/^/gm, "    ");

const CASES: ReplyCase[] = [
  {
    name: "three worked problems indented under a numbered list, the answer last",
    task: BELOW_ZERO_TASK,
    reply: `Let me recall some relevant problems first.

1. **Problem: running maximum.** Return the running maximum of a list.

   \`\`\`python
   def running_max(xs):
       result = []
       best = None
       for x in xs:
           best = x if best is None or x > best else best
           result.append(best)
       return result
   \`\`\`

2. **Problem: first negative prefix.** Return the index where a prefix sum first goes negative.

   \`\`\`python
   def first_negative_prefix(xs):
       total = 0
       for index, x in enumerate(xs):
           total += x
           if total < 0:
               return index
       return -1
   \`\`\`

3. **Problem: balanced parentheses.** Check that no prefix closes more than it opens.

   \`\`\`python
   def balanced(text):
       depth = 0
       for char in text:
           depth += 1 if char == "(" else -1
           if depth < 0:
               return False
       return depth == 0
   \`\`\`

Now the original problem. We keep a running balance and stop as soon as it is negative.

${fence(`from typing import List\n\n${BELOW_ZERO_CODE}`)}
`,
    check: BELOW_ZERO_CHECK,
    chosen: "block 4 of 4",
  },
  {
    name: "the answer itself indented under the last list item",
    task: BELOW_ZERO_TASK,
    reply: `## Relevant problems
1. Sum of a list:
    \`\`\`python
    def total(xs):
        # A worked example, longer than the answer on purpose, with comments.
        acc = 0
        for x in xs:
            acc = acc + x
        return acc
    \`\`\`
2. Solution to the task:
${underListItem(BELOW_ZERO_ANSWER)}
`,
    check: BELOW_ZERO_CHECK,
    chosen: "block 2 of 2",
  },
  {
    name: "the answer first, then a longer block of tests",
    task: BELOW_ZERO_TASK,
    reply: `${BELOW_ZERO_ANSWER}

You can check it with:

\`\`\`python
assert below_zero([1, 2, -4, 5]) is True
assert below_zero([1, 2, 3]) is False
assert below_zero([]) is False
assert below_zero([-1]) is True
print("all tests passed")
\`\`\`
`,
    check: BELOW_ZERO_CHECK,
    chosen: "block 1 of 2",
  },
  {
    name: "an imports-only block, prose, then the function",
    task: `import math\n\ndef hypotenuse(a: float, b: float) -> float:\n    """Length of the hypotenuse."""\n`,
    reply: `First the import we need:

\`\`\`python
import math
\`\`\`

Then the function, which uses \`math.sqrt\`:

\`\`\`python
def hypotenuse(a, b):
    return math.sqrt(a * a + b * b)
\`\`\`
`,
    check: "assert hypotenuse(3, 4) == 5\n",
    chosen: "block 2 of 2",
  },
  {
    name: "a worked example with a helper, prose between blocks, and an answer that needs its own import",
    task: `from typing import List\n\ndef sort_third(l: list):\n    """Sort the values at indices divisible by three."""\n`,
    reply: `A similar problem is sorting the even indices:

\`\`\`python
def sort_even(l):
    evens = sorted(l[::2])
    result = list(l)
    result[::2] = evens
    return result

print(sort_even([5, 6, 3, 4]))
\`\`\`

This prints \`[3, 6, 5, 4]\`. The same idea with a step of three gives the answer.

\`\`\`python
def sort_third(l):
    result = list(l)
    result[::3] = sorted(l[::3])
    return result
\`\`\`

That is all.
`,
    check: "assert sort_third([5, 6, 3, 4, 8, 9, 2]) == [2, 6, 3, 4, 8, 9, 5]\n",
    chosen: "block 2 of 2",
  },
  {
    name: "a first draft and a corrected version of the same function: the last wins",
    task: BELOW_ZERO_TASK,
    reply: `A first attempt:

\`\`\`python
def below_zero(operations):
    return sum(operations) < 0
\`\`\`

That only looks at the end balance. Corrected:

${BELOW_ZERO_ANSWER}
`,
    check: BELOW_ZERO_CHECK,
    chosen: "block 2 of 2",
  },
  {
    name: "the answer, then a usage block that only calls it",
    task: BELOW_ZERO_TASK,
    reply: `${BELOW_ZERO_ANSWER}

Example usage, with a longer explanation of each call in comments:

\`\`\`python
# The balance goes 1, 3, -1: below zero at the third operation, so this prints True.
print(below_zero([1, 2, -4, 5]))
# The balance only grows: this prints False.
print(below_zero([1, 2, 3]))
\`\`\`
`,
    check: BELOW_ZERO_CHECK,
    chosen: "block 1 of 2",
  },
];

function judge(program: string, check: string): boolean {
  try {
    execFileSync("python3", ["-I", "-c", `${program}\n${check}`], { stdio: "pipe", timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

describe("code extraction on multi-block model replies", () => {
  for (const replyCase of CASES) {
    it(`extracts a program that passes the hidden check: ${replyCase.name}`, () => {
      const extraction = extractCode(replyCase.reply, "python", namesInTask(replyCase.task));
      expect(extraction.code).not.toBeNull();
      expect(judge(extraction.code as string, replyCase.check)).toBe(true);
      if (replyCase.chosen) expect(extraction.choice).toContain(`Took ${replyCase.chosen}`);
    });
  }

  it("chooses the JavaScript answer after a worked example under a list item", () => {
    const reply = `1. Similar: count the vowels.
   \`\`\`javascript
   function countVowels(text) {
     let count = 0;
     for (const char of text) if ("aeiou".includes(char)) count += 1;
     return count;
   }
   \`\`\`
2. The answer:
   \`\`\`js
   function countUpper(text) {
     return [...text].filter((char) => char >= "A" && char <= "Z").length;
   }
   \`\`\`
`;
    const extraction = extractCode(reply, "javascript", namesInTask("Write `countUpper(text)`."));
    expect(extraction.code).toBe(
      'function countUpper(text) {\n  return [...text].filter((char) => char >= "A" && char <= "Z").length;\n}\n',
    );
    expect(extraction.choice).toMatch(/block 2 of 2: it is the last block that defines `countUpper`/);
  });

  it("says nothing about the choice when the reply has one block", () => {
    expect(extractCode("```python\nprint(1)\n```", "python", ["f"]).choice).toBeUndefined();
  });
});

describe("a run on a worked-examples reply", () => {
  it("runs the answer block, passes, and says in notes which block it took", async () => {
    const analogical = CASES[0] as ReplyCase;
    const result = await createAgent({
      model: scriptedModel(analogical.reply),
      sandbox: createSandbox({ kind: "process" }),
    }).invoke({ task: `Complete this function.\n\n${analogical.task}`, tests: analogical.check });
    expect(result.status).toBe("passed");
    expect(result.attempt).toBe(1);
    expect(result.notes).toContainEqual(
      expect.objectContaining({
        source: "generator",
        attempt: 1,
        message: "Took block 4 of 4: it is the last block that defines `below_zero`.",
      }),
    );
  });
});

describe("namesInTask", () => {
  it("finds the names a HumanEval prompt defines", () => {
    expect(namesInTask(BELOW_ZERO_TASK)).toEqual(["below_zero"]);
  });

  it("finds names quoted in backticks, written as calls, and JavaScript functions", () => {
    expect(namesInTask("Write `is_prime` and a helper.")).toEqual(["is_prime"]);
    expect(namesInTask("Write add(a, b).")).toEqual(["add"]);
    expect(namesInTask("function countUpper(text) should count capitals")).toEqual(["countUpper"]);
  });

  it("finds nothing in a task that names no function", () => {
    expect(namesInTask("Print the first ten primes, one per line.")).toEqual([]);
  });
});
