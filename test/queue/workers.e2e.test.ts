import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { loadDataset } from "../../src/benchmark/dataset.js";
import { createAgent, createChatModel, createSandbox, parseSettings } from "../../src/index.js";
import { type RunningCli, runCli, startCli, waitFor } from "../helpers/cli-helpers.js";
import { fence } from "../helpers/helpers.js";
import { startOpenAIStub } from "../helpers/openai-stub.js";
import {
  cleanUpQueueTest,
  POSTGRES_MISSING,
  POSTGRES_URL,
  queueSchemaName,
  scriptedTask,
  taskNumberOf,
  twoAttemptAnswer,
  workerLines,
} from "../helpers/queue-helpers.js";
import { scratchDir } from "../helpers/scratch.js";

const TASKS = 30;

/** The thread a worker has started and not yet finished, from its log so far. */
function heldThread(stdout: string): string | undefined {
  let held: string | undefined;
  for (const line of workerLines(stdout.slice(0, stdout.lastIndexOf("\n") + 1))) {
    if (line.event === "started") held = line.threadId;
    else if (line.event === "finished" || line.event === "retrying") held = undefined;
  }
  return held;
}

/** The same 30 tasks run one after another in this process, with the same scripted replies: the report to match. */
async function singleProcessReport(): Promise<
  Array<{ task: string; status: string; attempts: number; tokens: number }>
> {
  const stub = await startOpenAIStub((request) => twoAttemptAnswer(request, 0));
  const sandbox = createSandbox({ kind: "process" });
  try {
    const model = createChatModel("stub-model", { temperature: 0 }, { OPENAI_BASE_URL: stub.url });
    const agent = createAgent({ model, sandbox });
    const report = [];
    for (let n = 1; n <= TASKS; n++) {
      const state = await agent.invoke({ task: scriptedTask(n) }, { context: parseSettings({ sandbox: "process" }) });
      report.push({ task: state.task, status: state.status, attempts: state.attempt, tokens: state.usage.totalTokens });
    }
    return report;
  } finally {
    await sandbox.close();
    await stub.close();
  }
}

describe.skipIf(POSTGRES_MISSING !== null)(
  `the run queue: many worker processes${POSTGRES_MISSING ? ` (skipped: ${POSTGRES_MISSING})` : ""}`,
  () => {
    const url = POSTGRES_URL ?? "";
    const schema = queueSchemaName("workers");
    const prefix = `${schema}-thread`;
    afterAll(() => cleanUpQueueTest(url, schema, prefix));

    it("finishes 30 tasks exactly once over three workers when one is killed mid-run, repeating no model call but the one in flight", async () => {
      const stub = await startOpenAIStub((request) => twoAttemptAnswer(request));
      const workers: RunningCli[] = [];
      try {
        const env = { OPENAI_BASE_URL: stub.url, SELFHEAL_POSTGRES_URL: url, SELFHEAL_QUEUE_SCHEMA: schema };
        const dir = scratchDir("queue-workers");
        const file = join(dir, "tasks.jsonl");
        writeFileSync(
          file,
          Array.from({ length: TASKS }, (_, i) =>
            JSON.stringify({ task: scriptedTask(i + 1), thread: `${prefix}-${i + 1}` }),
          ).join("\n"),
        );
        const submitted = await runCli(
          ["submit", "--file", file, "--sandbox", "process", "--expire-in", "15", "--retry-delay", "1"],
          { env, cwd: dir },
        );
        expect(submitted.stderr).toBe("");
        expect(submitted.stdout.trim().split("\n")).toHaveLength(TASKS);

        const workerArgs = [
          "worker",
          "--json",
          "--until-empty",
          "--poll-interval",
          "0.5",
          "--heartbeat",
          "1",
          "--expiry-check",
          "1",
        ];
        for (let i = 0; i < 3; i++) workers.push(startCli(workerArgs, { env, cwd: dir }));
        const [victim] = workers;
        let victimOut = "";
        victim!.child.stdout?.on("data", (chunk) => (victimOut += chunk));

        // Kill the first worker while it runs a thread, once the others are busy too.
        await waitFor(() => stub.requests.length >= 20, "20 model requests", 60_000);
        await waitFor(() => heldThread(victimOut) !== undefined, "the victim mid-run", 30_000);
        const heldByVictim = heldThread(victimOut)!;
        victim!.child.kill("SIGKILL");
        await victim!.done;

        const results = await Promise.all(workers.slice(1).map((worker) => worker.done));
        for (const result of results) expect(result.code).toBe(0);

        const lines = [victimOut, ...results.map((result) => result.stdout)].flatMap(workerLines);
        const finished = lines.filter((line) => line.event === "finished");
        // Each ended passed: a status beside its thread says which did not, and why, if one failed.
        expect(
          finished.filter((line) => line.status !== "passed").map((line) => `${line.threadId}: ${line.status}`),
        ).toEqual([]);
        const finishedThreads = finished.map((line) => line.threadId).sort();
        expect(finishedThreads).toEqual(Array.from({ length: TASKS }, (_, i) => `${prefix}-${i + 1}`).sort());
        expect(finished.find((line) => line.threadId === heldByVictim)?.worker).not.toBe(
          workerLines(victimOut)[0]?.worker,
        );

        // Two requests per task, and a delivery after the first repeats at most the one call that was
        // in flight when the last delivery ended. The victim's thread was delivered again; on a busy
        // machine a thread whose run outlived --expire-in is too (its worker stops it and logs it).
        const deliveries = (n: number) =>
          lines.filter((line) => line.event === "started" && line.threadId === `${prefix}-${n}`).length;
        const byTask = new Map<number, typeof stub.requests>();
        for (const request of stub.requests) {
          const n = taskNumberOf(request);
          byTask.set(n, [...(byTask.get(n) ?? []), request]);
        }
        expect([...byTask.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: TASKS }, (_, i) => i + 1));
        const victimTask = Number(heldByVictim.split("-").at(-1));
        expect(deliveries(victimTask)).toBeGreaterThanOrEqual(2);
        for (const [n, requests] of byTask) {
          const repeats = deliveries(n) - 1;
          if (repeats === 0) expect(requests, `task ${n}`).toHaveLength(2);
          else expect(requests.length, `task ${n}`).toBeLessThanOrEqual(2 + repeats);
          // Its generator and fixer calls; any repeat is one of them, word for word.
          expect(new Set(requests.map((request) => JSON.stringify(request.messages))).size, `task ${n}`).toBe(2);
        }

        // One job per thread, each completed once; `runs` reports what a single process reports.
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        const jobs = await client
          .query<{ state: string; count: string }>(
            `SELECT state, count(*) FROM ${schema}.job WHERE name = 'selfheal-runs' GROUP BY state`,
          )
          .finally(() => client.end());
        expect(jobs.rows).toEqual([{ state: "completed", count: String(TASKS) }]);

        const runs = await runCli(["runs", "--json", "--limit", "1000"], { env, cwd: dir });
        const ours = (
          JSON.parse(runs.stdout) as Array<{
            threadId: string;
            task: string;
            status: string;
            attempts: number;
            tokens: number;
          }>
        )
          .filter((row) => row.threadId.startsWith(prefix))
          .map(({ task, status, attempts, tokens }) => ({ task, status, attempts, tokens }))
          .sort((a, b) => taskOrder(a.task) - taskOrder(b.task));
        expect(ours).toEqual(await singleProcessReport());
        expect(ours.every((row) => row.status === "passed" && row.attempts === 2)).toBe(true);
      } finally {
        for (const worker of workers) worker.child.kill("SIGKILL");
        await stub.close();
      }
    }, 120_000);
  },
);

describe.skipIf(POSTGRES_MISSING !== null)(
  `selfheal bench --queue${POSTGRES_MISSING ? ` (skipped: ${POSTGRES_MISSING})` : ""}`,
  () => {
    const url = POSTGRES_URL ?? "";
    const schema = queueSchemaName("bench");
    afterAll(() => cleanUpQueueTest(url, schema, "bench-"));

    it("hands the dataset to the workers and reports what a run in one process reports", async () => {
      const tasks = await loadDataset({ taskIds: ["HumanEval/0", "HumanEval/2"] });
      // The first answer of each task is wrong, the fix is the reference solution: two attempts each.
      const stub = await startOpenAIStub((request) => {
        const text = request.messages.map((message) => message.content).join("\n");
        const task = tasks.find((candidate) => text.includes(candidate.entry_point))!;
        const fixing = text.includes("Latest failure");
        const code = fixing
          ? `${task.prompt}${task.canonical_solution}`
          : `def ${task.entry_point}(*args):\n    return None\n`;
        return { content: fence(code), usage: { prompt_tokens: fixing ? 300 : 200, completion_tokens: 50 } };
      });
      const env = { OPENAI_BASE_URL: stub.url, SELFHEAL_POSTGRES_URL: url, SELFHEAL_QUEUE_SCHEMA: schema };
      const dir = scratchDir("bench-queue");
      const args = ["bench", "--model", "stub-model", "--tasks", "0,2", "--max-attempts", "3", "--sandbox", "process"];
      const worker = startCli(["worker", "--poll-interval", "0.5", "--concurrency", "2"], { env, cwd: dir });
      try {
        const direct = await runCli([...args, "--json", join(dir, "direct.json")], { env, cwd: dir });
        expect(direct.code).toBe(0);
        await waitFor(() => worker.stderr().includes("taking jobs"), "the worker to start");
        const queued = await runCli([...args, "--queue", "--json", join(dir, "queued.json")], { env, cwd: dir });
        expect(queued.stderr).not.toContain("HarnessError");
        expect(queued.code).toBe(0);
        const outcomes = (file: string) =>
          (
            JSON.parse(readFileSync(join(dir, file), "utf8")) as { perTask: Array<Record<string, unknown>> }
          ).perTask.map(({ taskId, status, attempts, solved, inputTokens, outputTokens, attemptOutcomes }) => ({
            taskId,
            status,
            attempts,
            solved,
            inputTokens,
            outputTokens,
            attemptOutcomes,
          }));
        expect(outcomes("queued.json")).toEqual(outcomes("direct.json"));
        expect(outcomes("queued.json")).toEqual([
          expect.objectContaining({ taskId: "HumanEval/0", solved: true, attempts: 2 }),
          expect.objectContaining({ taskId: "HumanEval/2", solved: true, attempts: 2 }),
        ]);
        worker.child.kill("SIGTERM");
        expect((await worker.done).code).toBe(0);
      } finally {
        worker.child.kill("SIGKILL");
        await stub.close();
      }
    });
  },
);

function taskOrder(task: string): number {
  return Number(/Task (\d+):/.exec(task)?.[1]);
}
