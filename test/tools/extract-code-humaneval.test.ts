import { execFileSync } from "node:child_process";
import { beforeAll, describe, expect, it } from "vitest";
import { type BenchmarkTask, loadDataset } from "../../src/benchmark/index.js";
import { namesInTask } from "../../src/nodes/write-program.js";
import { extractCode } from "../../src/tools/extract-code.js";

/**
 * Every HumanEval task, answered in the multi-block shapes real models use, with the reference
 * solution as the answer and two other tasks' solutions as the worked examples. The extracted
 * program must pass the task's hidden check.
 */
const indent = (text: string, by: string) => text.replace(/^(?=.)/gm, by);
const fenced = (code: string) => `\`\`\`python\n${code.trimEnd()}\n\`\`\``;
const solution = (task: BenchmarkTask) => `${task.prompt}${task.canonical_solution}`;

const SHAPES: Record<string, (task: BenchmarkTask, examples: BenchmarkTask[]) => string> = {
  "worked examples indented under a list, the answer last": (task, examples) =>
    [
      "Let me solve some similar problems first.",
      ...examples.map((example, i) => `${i + 1}. A related problem:\n\n${indent(fenced(solution(example)), "   ")}`),
      "Now the original problem:",
      fenced(solution(task)),
    ].join("\n\n"),
  "the answer too indented under the last list item": (task, examples) =>
    [
      ...examples.map((example, i) => `${i + 1}. Example:\n${indent(fenced(solution(example)), "    ")}`),
      `${examples.length + 1}. The answer:\n${indent(fenced(solution(task)), "    ")}`,
    ].join("\n"),
  "the answer first, then a block that runs the tests": (task) =>
    [
      fenced(solution(task)),
      "And the tests I checked it with:",
      fenced(`${task.test}\ncheck(${task.entry_point})\nprint("all passed")`),
    ].join("\n\n"),
};

/** How many of these programs pass their task's hidden check, run one by one in one python3. */
function countPassing(programs: { program: string; task: BenchmarkTask }[]): number {
  const judge = `
import json, sys
cases = json.load(sys.stdin)
passed = 0
for case in cases:
    try:
        exec(case["program"] + "\\n" + case["test"] + "\\ncheck(" + case["entry_point"] + ")\\n", {"__name__": "judged"})
        passed += 1
    except BaseException as error:
        print(case["task_id"], type(error).__name__, error, file=sys.stderr)
print(passed)
`;
  const input = JSON.stringify(
    programs.map(({ program, task }) => ({
      program,
      test: task.test,
      entry_point: task.entry_point,
      task_id: task.task_id,
    })),
  );
  return Number(execFileSync("python3", ["-c", judge], { input, timeout: 120_000 }).toString().trim());
}

describe("code extraction on every HumanEval task, answered in several blocks", () => {
  let tasks: BenchmarkTask[] = [];
  beforeAll(async () => {
    tasks = await loadDataset({ dataset: "humaneval" });
  });

  for (const [shape, reply] of Object.entries(SHAPES)) {
    it(`extracts a passing program from all 164 tasks: ${shape}`, () => {
      const programs = tasks.map((task, index) => {
        // The next two tasks' solutions are the worked examples: longer than the answer about half the time.
        const examples = [tasks[(index + 1) % tasks.length], tasks[(index + 2) % tasks.length]] as BenchmarkTask[];
        const extraction = extractCode(reply(task, examples), "python", namesInTask(task.prompt));
        return { program: extraction.code ?? "", task };
      });
      expect(tasks).toHaveLength(164);
      expect(countPassing(programs)).toBe(164);
    });
  }
});
