import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Command } from "commander";
import { afterEach, describe, expect, it, vi } from "vitest";
import { registerBenchCommand } from "../src/cli/commands/bench.js";
import { scratchDir } from "./scratch.js";

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
    expect(result.stdout).toMatch(/solved within 4 attempts\s+2 \(100\.0%\)/);
    // Not a terminal here, so progress comes as plain lines on stderr.
    expect(result.stderr).toMatch(/\[2\/2\] HumanEval\/\d: passed in 2 attempt\(s\)/);
    const report = JSON.parse(readFileSync(jsonPath, "utf8"));
    expect(report.model).toMatchObject({ name: "simulated", simulated: true });
    expect(report.perTask.map((task: { taskId: string }) => task.taskId)).toEqual(["HumanEval/0", "HumanEval/2"]);
  }, 60_000);

  it("verifies the dataset's judge on chosen tasks and exits 0 when it holds", async () => {
    const result = await bench("--verify-dataset", "--tasks", "HumanEval/0,HumanEval/1");
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/reference solutions passing\s+2\/2/);
    expect(result.stdout).toMatch(/false passes\s+0/);
  }, 60_000);

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
  }, 60_000);

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
