import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import {
  type BenchmarkTask,
  buildCheckProgram,
  DatasetError,
  filterTasks,
  loadDataset,
  parseDatasetText,
  parseTaskIds,
  resolveDatasetPath,
} from "../../src/benchmark/dataset.js";
import { REPO } from "../helpers/cli-helpers.js";
import { scratchDir } from "../helpers/scratch.js";

const task = (id: string): BenchmarkTask => ({
  task_id: id,
  prompt: 'def add(a, b):\n    """Add."""\n',
  canonical_solution: "    return a + b\n",
  test: "def check(candidate):\n    assert candidate(1, 2) == 3\n",
  entry_point: "add",
});
const jsonl = (...tasks: BenchmarkTask[]) => `${tasks.map((row) => JSON.stringify(row)).join("\n")}\n`;

function writeTemp(name: string, content: string | Buffer): string {
  const path = join(scratchDir("dataset"), name);
  writeFileSync(path, content);
  return path;
}

describe("dataset", () => {
  it("loads the HumanEval file vendored in the repository with all 164 tasks", async () => {
    const tasks = await loadDataset();
    expect(tasks).toHaveLength(164);
    expect(tasks[0]?.task_id).toBe("HumanEval/0");
    expect(resolveDatasetPath()).toBe(join(REPO, "datasets", "humaneval.jsonl.gz"));
  });

  it("detects gzip by its magic bytes even when the name says plain jsonl", async () => {
    const path = writeTemp("tasks.jsonl", gzipSync(jsonl(task("T/1"), task("T/2"))));
    const tasks = await loadDataset({ dataset: path });
    expect(tasks.map((row) => row.task_id)).toEqual(["T/1", "T/2"]);
  });

  it("reads plain JSONL and skips blank lines", async () => {
    const path = writeTemp("tasks.jsonl", `\n${jsonl(task("T/1"))}\n\n`);
    expect(await loadDataset({ dataset: path })).toHaveLength(1);
  });

  it("names the line and the missing field of an invalid row", () => {
    const { entry_point: _dropped, ...incomplete } = task("T/2");
    const text = `${JSON.stringify(task("T/1"))}\n${JSON.stringify(incomplete)}\n`;
    expect(() => parseDatasetText(text, "mine.jsonl")).toThrow(/mine\.jsonl:2: .*entry_point/);
  });

  it("names the line of malformed JSON", () => {
    expect(() => parseDatasetText(`${JSON.stringify(task("T/1"))}\n{"task_id": \n`, "x.jsonl")).toThrow(
      /x\.jsonl:2: not valid JSON/,
    );
  });

  it("rejects duplicate task ids", () => {
    expect(() => parseDatasetText(jsonl(task("T/1"), task("T/1")))).toThrow(/duplicate task_id T\/1/);
  });

  it("filters by ids in dataset order, then by limit", () => {
    const tasks = [task("A"), task("B"), task("C")];
    expect(filterTasks(tasks, { taskIds: ["C", "A"] }).map((row) => row.task_id)).toEqual(["A", "C"]);
    expect(filterTasks(tasks, { limit: 2 }).map((row) => row.task_id)).toEqual(["A", "B"]);
    expect(() => filterTasks(tasks, { taskIds: ["Z"] })).toThrow(DatasetError);
    expect(() => filterTasks(tasks, { limit: 0 })).toThrow(/positive integer/);
  });

  it("accepts bare numbers as the dataset's own ids", () => {
    expect(parseTaskIds("0, HumanEval/5,12")).toEqual(["HumanEval/0", "HumanEval/5", "HumanEval/12"]);
    expect(parseTaskIds("2,Mbpp/3", "mbppplus")).toEqual(["Mbpp/2", "Mbpp/3"]);
  });

  it("loads HumanEval+ and MBPP+ by name through the same loader", async () => {
    const plus = await loadDataset({ dataset: "humanevalplus" });
    const mbpp = await loadDataset({ dataset: "mbppplus" });
    expect(plus).toHaveLength(164);
    expect(mbpp).toHaveLength(378);
    expect(mbpp[0]?.task_id).toBe("Mbpp/2");
    expect(resolveDatasetPath({ dataset: "mbppplus" })).toBe(join(REPO, "datasets", "mbppplus.jsonl.gz"));
  });

  it("makes MBPP+'s regex tasks assert the verdict their published helper only computes", async () => {
    const fixed = await loadDataset({ dataset: "mbppplus", taskIds: ["Mbpp/737", "Mbpp/787", "Mbpp/794"] });
    for (const task of fixed) expect(task.test).toContain("    assert exact_match, ");
  });

  it("fixes HumanEval+/32's published check, whose arguments are in the wrong order", async () => {
    const [fixed] = await loadDataset({ dataset: "humanevalplus", taskIds: ["HumanEval/32"] });
    expect(fixed?.test).toContain("assert abs(_poly(*inp, candidate(*inp))) <= 0.0001");
    expect(fixed?.test).not.toContain("_poly(*candidate(*inp), inp)");
  });

  it("builds the judge program by HumanEval's rule", () => {
    const program = buildCheckProgram(task("T/1"), "    return a + b\n");
    expect(program).toContain("    return a + b\n\ndef check(candidate)");
    expect(program.trimEnd().endsWith("check(add)")).toBe(true);
  });
});
