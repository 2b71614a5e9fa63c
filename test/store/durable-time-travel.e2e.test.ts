import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CheckpointRow } from "../../src/cli/commands/history.js";
import type { RunRow } from "../../src/cli/commands/runs.js";
import { runCli } from "../helpers/cli-helpers.js";
import { fence } from "../helpers/helpers.js";
import { type OpenAIStub, startOpenAIStub } from "../helpers/openai-stub.js";
import { scratchDir } from "../helpers/scratch.js";

describe("history, runs and time travel", () => {
  let stub: OpenAIStub;
  const dir = scratchDir("travel");
  const db = join(dir, "runs.db");
  beforeAll(async () => {
    // model-a writes the buggy draft and its fix; model-b, used only by the fork, fixes it its own way.
    stub = await startOpenAIStub((request, index) => {
      if (request.model === "model-b")
        return { content: fence("print(sum([4, 6]) // 2)"), usage: { prompt_tokens: 70, completion_tokens: 10 } };
      return index === 0
        ? {
            content: fence("values = []\nprint(sum(values) / len(values))"),
            usage: { prompt_tokens: 60, completion_tokens: 15 },
          }
        : {
            content: fence("values = [4, 6]\nprint(sum(values) / len(values))"),
            usage: { prompt_tokens: 90, completion_tokens: 15 },
          };
    });
  });
  afterAll(() => stub.close());

  it("forks a run from an earlier checkpoint with another model, leaving the original thread unchanged", async () => {
    const env = { OPENAI_BASE_URL: stub.url };
    const thread = `travel-${Date.now()}`;
    const fork = `${thread}-fork`;

    const original = await runCli(
      [
        "run",
        "Print the mean of 4 and 6.",
        "--model",
        "model-a",
        "--thread",
        thread,
        "--db",
        db,
        "--json",
        "--sandbox",
        "process",
      ],
      {
        env,
      },
    );
    expect(original.code).toBe(0);
    const originalSummary = JSON.parse(original.stdout);
    expect(originalSummary).toMatchObject({ status: "passed", attempt: 2 });

    const history = await runCli(["history", thread, "--db", db, "--json"], { env });
    expect(history.code).toBe(0);
    const checkpoints: CheckpointRow[] = JSON.parse(history.stdout);
    expect(checkpoints.map((row) => row.node)).toEqual([
      "input",
      "start",
      "generator",
      "executor",
      "critic",
      "fixer",
      "executor",
      "critic",
      "finish",
    ]);
    expect(checkpoints.at(-1)).toMatchObject({ attempt: 2, status: "passed", next: [] });
    const afterFirstFailure = checkpoints.find((row) => row.node === "critic" && row.next.includes("fixer"));
    expect(afterFirstFailure).toMatchObject({ attempt: 1, status: "running" });

    const forked = await runCli(
      [
        "resume",
        thread,
        "--from",
        afterFirstFailure!.checkpointId,
        "--thread",
        fork,
        "--model",
        "model-b",
        "--db",
        db,
        "--json",
      ],
      { env },
    );
    expect(forked.code).toBe(0);
    const forkSummary = JSON.parse(forked.stdout);
    expect(forkSummary).toMatchObject({
      status: "passed",
      attempt: 2,
      threadId: fork,
      forkedFrom: { threadId: thread, checkpointId: afterFirstFailure!.checkpointId },
    });
    expect(forkSummary.code).toContain("sum([4, 6]) // 2");
    expect(forkSummary.code).not.toEqual(originalSummary.code);
    // The fork re-asked only the fixer, and of model-b: the generator's work was reused.
    expect(stub.requests.map((request) => request.model)).toEqual(["model-a", "model-a", "model-b"]);

    // The original thread: same checkpoints, same head, same code.
    const historyAfter = await runCli(["history", thread, "--db", db, "--json"], { env });
    expect(JSON.parse(historyAfter.stdout)).toEqual(checkpoints);
    const originalAfter = await runCli(["resume", thread, "--db", db, "--json"], { env });
    expect(originalAfter.code).toBe(0);
    expect(originalAfter.stderr).toMatch(/already ended: passed/);
    expect(JSON.parse(originalAfter.stdout).code).toEqual(originalSummary.code);

    const runs = await runCli(["runs", "--db", db, "--json"], { env });
    const rows: RunRow[] = JSON.parse(runs.stdout);
    expect(rows.map((row) => row.threadId).sort()).toEqual([thread, fork].sort());
    expect(rows.find((row) => row.threadId === thread)).toMatchObject({
      task: "Print the mean of 4 and 6.",
      status: "passed",
      attempts: 2,
      tokens: 180,
    });
    // The fork keeps the generator's 75 tokens from before the checkpoint and adds model-b's 80.
    expect(rows.find((row) => row.threadId === fork)).toMatchObject({
      status: "passed",
      attempts: 2,
      tokens: 155,
      forkedFrom: { threadId: thread },
    });
  });
});
