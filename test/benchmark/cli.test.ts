import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Command } from "commander";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { type BenchmarkTask, loadDataset } from "../../src/benchmark/dataset.js";
import { registerBenchCommand } from "../../src/cli/commands/bench-command.js";
import { type OpenAIStub, startOpenAIStub } from "../helpers/openai-stub.js";
import { scratchDir } from "../helpers/scratch.js";

/** Runs `selfheal bench ...args` in-process and returns what it printed and its exit code. */
async function bench(...args: string[]) {
  const stdout: string[] = [];
  const stderr: string[] = [];
  vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
    stdout.push(String(chunk));
    return true;
  });
  vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
    stderr.push(String(chunk));
    return true;
  });
  const program = new Command("selfheal").exitOverride();
  registerBenchCommand(program);
  process.exitCode = undefined;
  try {
    await program.parseAsync(["bench", ...args], { from: "user" });
  } finally {
    vi.restoreAllMocks();
  }
  const exitCode = process.exitCode ?? 0;
  process.exitCode = undefined;
  return { stdout: stdout.join(""), stderr: stderr.join(""), exitCode };
}

const tempDir = () => scratchDir("bench-cli");

afterEach(() => {
  process.exitCode = undefined;
});

describe("selfheal bench", () => {
  it("prints a labelled table and writes the JSON report for a simulated run", async () => {
    const jsonPath = join(tempDir(), "report.json");
    const result = await bench("--simulated", "--tasks", "0,2", "--json", jsonPath);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/^SIMULATED MODEL/);
    expect(result.stdout).toMatch(/final pass, hidden tests \(max 4 attempts\)\s+2 \(100\.0%\)/);
    expect(result.stdout).toMatch(/pass@1, first attempt \(hidden tests\)\s+0 \(0\.0%\)/);
    // Not a terminal here, so progress comes as plain lines on stderr.
    expect(result.stderr).toMatch(/\[2\/2\] HumanEval\/\d: passed in 2 attempt\(s\), hidden tests: solved/);
    const report = JSON.parse(readFileSync(jsonPath, "utf8"));
    expect(report.model).toMatchObject({ name: "simulated", simulated: true });
    expect(report.perTask.map((task: { taskId: string }) => task.taskId)).toEqual(["HumanEval/0", "HumanEval/2"]);
  });

  it("compares the strategies asked for at the candidates asked for, in the table and the HTML chart's data", async () => {
    const htmlPath = join(tempDir(), "report.html");
    const result = await bench(
      "--simulated",
      "--tasks",
      "0",
      "--max-attempts",
      "2",
      "--candidates",
      "2",
      "--strategy",
      "repair,resample,mixed",
      "--html",
      htmlPath,
    );
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/repair, 2 candidates: solved \/ tokens per task \/ per 1k\s+1 \//);
    expect(result.stdout).toMatch(/resample, 2 candidates: solved \/ tokens per task \/ per 1k\s+0 \//);
    expect(result.stdout).toMatch(/mixed, 2 candidates: solved \/ tokens per task \/ per 1k\s+1 \//);
    expect(readFileSync(htmlPath, "utf8")).toMatch(/"strategies":\{"repair":\[.*\],"resample":\[.*\],"mixed":\[/);
  }, 120_000);

  it("refuses a strategy it does not know", async () => {
    await expect(bench("--simulated", "--strategy", "repair,vote")).rejects.toThrow(
      "expected repair, resample, mixed or a comma list of them",
    );
  });

  it("verifies the dataset's judge on chosen tasks and exits 0 when it holds", async () => {
    const result = await bench("--verify-dataset", "--tasks", "HumanEval/0,HumanEval/1");
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/reference solutions passing\s+2\/2/);
    expect(result.stdout).toMatch(/false passes\s+0/);
  });

  it("exits 1 when the judge lets a behaviour-changing mutant through", async () => {
    const path = join(tempDir(), "weak.jsonl");
    const weak = {
      task_id: "Weak/0",
      prompt: 'def double(x):\n    """Return 2 * x."""\n',
      canonical_solution: "    return 2 * x\n",
      test: "def check(candidate):\n    candidate(3)\n",
      entry_point: "double",
    };
    writeFileSync(path, `${JSON.stringify(weak)}\n`);
    const result = await bench("--verify-dataset", "--dataset", path);
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toMatch(/FALSE PASS Weak\/0/);
  });

  it("names the file and line of a broken dataset and exits 2", async () => {
    const path = join(tempDir(), "broken.jsonl");
    writeFileSync(path, '{"task_id": "A"}\n');
    const result = await bench("--verify-dataset", "--dataset", path);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/broken\.jsonl:1: not a HumanEval task/);
  });

  it("refuses to run a real model without model configuration", async () => {
    const saved = { key: process.env.OPENAI_API_KEY, url: process.env.OPENAI_BASE_URL };
    delete process.env.OPENAI_API_KEY;
    delete process.env.OPENAI_BASE_URL;
    try {
      await expect(bench("--limit", "1")).rejects.toThrow(/No model is configured/);
    } finally {
      if (saved.key !== undefined) process.env.OPENAI_API_KEY = saved.key;
      if (saved.url !== undefined) process.env.OPENAI_BASE_URL = saved.url;
    }
  });
});

/** Lines of a task's hidden tests that say something of their own (not also in the prompt). */
const hiddenLines = (task: BenchmarkTask): string[] =>
  task.test
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line.length >= 20 && !task.prompt.includes(line));

describe("selfheal bench against an OpenAI-compatible server", () => {
  let stub: OpenAIStub;
  const saved = {
    url: process.env.OPENAI_BASE_URL,
    key: process.env.OPENAI_API_KEY,
    retries: process.env.SELFHEAL_MODEL_RETRIES,
  };

  beforeAll(async () => {
    // A model that always answers with a wrong implementation of whatever function it is asked for.
    stub = await startOpenAIStub((request) => {
      const text = request.messages.map((message) => message.content).join("\n");
      const name = /Complete the Python function `(\w+)`/.exec(text)?.[1] ?? "solution";
      return { content: `\`\`\`python\ndef ${name}(*args, **kwargs):\n    return None\n\`\`\`` };
    });
    process.env.OPENAI_BASE_URL = stub.url;
    process.env.SELFHEAL_MODEL_RETRIES = "0";
  });
  afterAll(async () => {
    await stub.close();
    for (const [name, value] of [
      ["OPENAI_BASE_URL", saved.url],
      ["OPENAI_API_KEY", saved.key],
      ["SELFHEAL_MODEL_RETRIES", saved.retries],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  const requestsSince = (start: number) =>
    stub.requests.slice(start).map((request) => JSON.stringify(request.messages));

  it("sends no hidden test to the model under the default feedback, while the fixer sees the failing example", async () => {
    const start = stub.requests.length;
    const humaneval = await bench("--model", "stub-model", "--tasks", "0,2,12", "--max-attempts", "3");
    const mbpp = await bench("--model", "stub-model", "--dataset", "mbppplus", "--tasks", "2,3", "--max-attempts", "3");
    expect(humaneval.exitCode).toBe(0);
    expect(mbpp.exitCode).toBe(0);
    const requests = requestsSince(start);
    // The fixer ran, so failures were fed back: the check below is not vacuous.
    expect(requests.filter((request) => request.includes("Latest failure")).length).toBeGreaterThan(0);
    expect(requests.some((request) => request.includes("the task's docstring shows False"))).toBe(true);
    expect(
      requests.some((request) => request.includes("the task's example failed: assert is_not_prime(2) == False")),
    ).toBe(true);
    const tasks = [
      ...(await loadDataset({ taskIds: ["HumanEval/0", "HumanEval/2", "HumanEval/12"] })),
      ...(await loadDataset({ dataset: "mbppplus", taskIds: ["Mbpp/2", "Mbpp/3"] })),
    ];
    for (const task of tasks) {
      const lines = hiddenLines(task);
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines)
        for (const request of requests) expect(request.includes(line), `${task.task_id}: ${line}`).toBe(false);
    }
    expect(humaneval.stdout).toMatch(/final pass, hidden tests \(max 3 attempts\)\s+0 \(0\.0%\)/);
    expect(humaneval.stdout).not.toMatch(/ORACLE/);
  }, 120_000);

  it("under --feedback oracle sends the hidden assertion and labels the table, the JSON and the HTML", async () => {
    const start = stub.requests.length;
    const dir = tempDir();
    const result = await bench(
      "--model",
      "stub-model",
      "--tasks",
      "0",
      "--max-attempts",
      "2",
      "--feedback",
      "oracle",
      "--json",
      join(dir, "r.json"),
      "--html",
      join(dir, "r.html"),
    );
    expect(result.exitCode).toBe(0);
    const [task] = await loadDataset({ taskIds: ["HumanEval/0"] });
    expect(hiddenLines(task!).some((line) => requestsSince(start).some((request) => request.includes(line)))).toBe(
      true,
    );
    expect(result.stdout).toMatch(/^ORACLE FEEDBACK/);
    expect(result.stderr).toMatch(/ORACLE FEEDBACK/);
    expect(JSON.parse(readFileSync(join(dir, "r.json"), "utf8")).feedback).toMatchObject({
      mode: "oracle",
      label: expect.stringMatching(/^ORACLE FEEDBACK/),
    });
    expect(readFileSync(join(dir, "r.html"), "utf8")).toMatch(/class="banner oracle">ORACLE FEEDBACK/);
  }, 120_000);

  it("with --html writes each task's run report beside the benchmark report and links the task to it", async () => {
    const dir = tempDir();
    const result = await bench(
      "--model",
      "stub-model",
      "--tasks",
      "0",
      "--max-attempts",
      "2",
      "--html",
      join(dir, "b.html"),
    );
    expect(result.exitCode).toBe(0);
    const html = readFileSync(join(dir, "b.html"), "utf8");
    expect(html).toContain('<a class="run-report" href="b-runs/task-HumanEval-0.html">run report</a>');
    const runReport = readFileSync(join(dir, "b-runs", "task-HumanEval-0.html"), "utf8");
    expect(runReport.match(/<tr class="attempt-row/g)).toHaveLength(2);
    expect(runReport).toContain("stub-model");
  }, 120_000);
});
