import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgent, createSandbox, parseSettings } from "../../src/index.js";
import {
  DEAD_LETTER_QUEUE,
  type Delivery,
  ModelCallGate,
  SharedTokenBucket,
  TaskQueue,
  workerName,
} from "../../src/queue/index.js";
import { runCli, startCli, waitFor } from "../helpers/cli-helpers.js";
import { fence, scriptedModel } from "../helpers/helpers.js";
import { startOpenAIStub } from "../helpers/openai-stub.js";
import {
  cleanUpQueueTest,
  POSTGRES_MISSING,
  POSTGRES_URL,
  queueSchemaName,
  scriptedTask,
  taskNumberOf,
  waitUntil,
} from "../helpers/queue-helpers.js";
import { scratchDir } from "../helpers/scratch.js";

const FAST = { retryLimit: 2, retryDelaySeconds: 1, expireInSeconds: 30 };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const input = (n: number) => ({ task: scriptedTask(n) });

/** Each test gets a schema of its own, so one test's jobs never reach another's handler. */
function queueTest(label: string) {
  const schema = queueSchemaName(label);
  const opened: TaskQueue[] = [];
  return {
    schema,
    prefix: `${schema}-thread`,
    async open() {
      const queue = await TaskQueue.open({ url: POSTGRES_URL ?? "", schema }, { maintenanceIntervalSeconds: 1 });
      opened.push(queue);
      return queue;
    },
    async cleanUp() {
      for (const queue of opened) await queue.close(1000).catch(() => undefined);
      await cleanUpQueueTest(POSTGRES_URL ?? "", schema, `${schema}-thread`);
    },
  };
}

const WORK = { concurrency: 1, pollingIntervalSeconds: 0.5, heartbeatSeconds: 1 };

describe.skipIf(POSTGRES_MISSING !== null)(
  `the run queue${POSTGRES_MISSING ? ` (skipped: ${POSTGRES_MISSING})` : ""}`,
  () => {
    const url = POSTGRES_URL ?? "";

    describe("delivery", () => {
      const t = queueTest("delivery");
      afterAll(() => t.cleanUp());

      it("retries a job that keeps failing with growing delays, then dead-letters it with its reason", async () => {
        const queue = await t.open();
        const deliveredAt: number[] = [];
        await queue.submit([{ threadId: `${t.prefix}-env`, input: input(1) }], FAST);
        await queue.work(WORK, async () => {
          deliveredAt.push(Date.now());
          throw new Error("the model endpoint is unreachable");
        });
        await waitFor(() => deliveredAt.length === 3, "three deliveries", 30_000);
        await waitUntil(async () => (await queue.list())[0]?.state === "dead-lettered", "the dead letter", 10_000);
        const [job] = await queue.list();
        expect(job).toMatchObject({ state: "dead-lettered", retries: 2, reason: "the model endpoint is unreachable" });
        // pg-boss backs off: the delay before retry n is between d*2^(n-1) and twice that.
        expect(deliveredAt[1]! - deliveredAt[0]!).toBeGreaterThanOrEqual(1000);
        expect(deliveredAt[2]! - deliveredAt[1]!).toBeGreaterThanOrEqual(2000);
        const dead = await query<{ thread_id: string }>(
          `SELECT data->>'threadId' AS thread_id FROM ${t.schema}.job WHERE name = $1`,
          [DEAD_LETTER_QUEUE],
        );
        expect(dead).toEqual([{ thread_id: `${t.prefix}-env` }]);
      });
    });

    describe("limits", () => {
      const t = queueTest("limits");
      afterAll(() => t.cleanUp());

      it("runs no more jobs at once in one worker than its concurrency, highest priority first", async () => {
        const queue = await t.open();
        await queue.submit(
          Array.from({ length: 6 }, (_, i) => ({
            threadId: `${t.prefix}-${i}`,
            input: input(i),
            priority: i === 5 ? 10 : 0,
          })),
          FAST,
        );
        let running = 0;
        let most = 0;
        const order: string[] = [];
        await queue.work({ ...WORK, concurrency: 2 }, async (delivery) => {
          order.push(delivery.data.threadId);
          most = Math.max(most, ++running);
          await sleep(300);
          running--;
          return {};
        });
        await waitUntil(async () => (await queue.pendingCount()) === 0, "all six jobs", 30_000);
        expect(order).toHaveLength(6);
        expect(most).toBe(2);
        expect(order.slice(0, 2)).toContain(`${t.prefix}-5`);
      });

      it("shares one model-call rate between workers on separate connections", async () => {
        const rate = { perMinute: 600, burst: 1 };
        const buckets = await Promise.all([
          SharedTokenBucket.open(url, t.schema, "shared-test", rate),
          SharedTokenBucket.open(url, t.schema, "shared-test", rate),
        ]);
        try {
          const grantedAt: number[] = [];
          const started = Date.now();
          await Promise.all(
            buckets.flatMap((bucket) =>
              Array.from({ length: 4 }, async () => {
                await bucket.take();
                grantedAt.push(Date.now() - started);
              }),
            ),
          );
          grantedAt.sort((a, b) => a - b);
          // Ten a second with a burst of one: the eighth call cannot go before 0.7 s, whichever worker makes it.
          expect(grantedAt).toHaveLength(8);
          expect(grantedAt[7]).toBeGreaterThanOrEqual(650);
        } finally {
          for (const bucket of buckets) await bucket.close();
        }
      });

      it("holds every model call of a run at the gate, the nodes' own calls included", async () => {
        let taken = 0;
        const gate = new ModelCallGate({ take: async () => void taken++ });
        const sandbox = createSandbox({ kind: "process" });
        try {
          const agent = createAgent({ model: scriptedModel(fence("print(1 / 0)"), fence("print(1)")), sandbox });
          const state = await agent.invoke(
            { task: "Print one." },
            { context: parseSettings({ sandbox: "process" }), callbacks: [gate] },
          );
          expect(state.status).toBe("passed");
          expect(taken).toBe(2);
        } finally {
          await sandbox.close();
        }
      });
    });

    describe("cancel and status", () => {
      const t = queueTest("cancel");
      afterAll(() => t.cleanUp());

      it("shows a running job's worker and heartbeat, and stops it when it is cancelled", async () => {
        const queue = await t.open();
        const submittedAt = Date.now();
        await queue.submit([{ threadId: `${t.prefix}-running`, input: input(1) }], FAST);
        let delivery: Delivery | undefined;
        await queue.work(WORK, async (given) => {
          delivery = given;
          given.setStep("generator");
          await new Promise((resolve) => given.signal.addEventListener("abort", resolve));
          return {};
        });
        await waitUntil(async () => (await queue.list())[0]?.step === "generator", "the first heartbeat", 30_000);
        const [running] = await queue.list();
        expect(running).toMatchObject({ state: "running", worker: workerName() });
        // A heartbeat of this run, not a bound on how recent: the database keeps whole seconds at most.
        expect(Date.parse(running!.heartbeatAt!)).toBeGreaterThanOrEqual(Math.floor(submittedAt / 1000) * 1000);

        expect(await queue.cancel([`${t.prefix}-running`])).toEqual([`${t.prefix}-running`]);
        await waitFor(() => delivery?.signal.aborted === true, "the cancellation to reach the run", 10_000);
        expect((await queue.list())[0]?.state).toBe("cancelled");
      });
    });

    describe("from the command line", () => {
      const t = queueTest("cli");
      let stub: Awaited<ReturnType<typeof startOpenAIStub>>;
      beforeAll(async () => {
        // Task 1 never gets an answer from its model; every other task's program always fails.
        stub = await startOpenAIStub((request) =>
          taskNumberOf(request) === 1 ? { status: 503, message: "overloaded" } : { content: fence("print(1 / 0)") },
        );
      });
      afterAll(async () => {
        await stub.close();
        await t.cleanUp();
      });

      it("dead-letters a run whose model is down, finishes a failed run once, and never starts a cancelled one", async () => {
        const env = {
          OPENAI_BASE_URL: stub.url,
          SELFHEAL_POSTGRES_URL: url,
          SELFHEAL_QUEUE_SCHEMA: t.schema,
          SELFHEAL_MODEL_RETRIES: "0",
        };
        const dir = scratchDir("queue-cli");
        const submit = (n: number) =>
          runCli(
            [
              "submit",
              scriptedTask(n),
              "--thread",
              `${t.prefix}-${n}`,
              "--sandbox",
              "process",
              "--max-attempts",
              "1",
            ].concat(["--retries", "1", "--retry-delay", "1"]),
            { env, cwd: dir },
          );
        for (const n of [1, 2, 3]) expect((await submit(n)).stdout).toBe(`${t.prefix}-${n}\n`);
        const cancelled = await runCli(["cancel", `${t.prefix}-3`, `${t.prefix}-404`], { env, cwd: dir });
        expect(cancelled.stdout).toBe(`cancelled ${t.prefix}-3\n`);
        expect(cancelled.stderr).toContain(`thread ${t.prefix}-404 has no queued or running job`);
        expect(cancelled.code).toBe(1);

        const queued = await runCli(["runs", "--json"], { env, cwd: dir });
        expect(statusOf(queued.stdout, `${t.prefix}-2`)).toBe("queued");
        expect(statusOf(queued.stdout, `${t.prefix}-3`)).toBe("cancelled");

        const worker = startCli(["worker", "--until-empty", "--poll-interval", "0.5", "--expiry-check", "1"], {
          env,
          cwd: dir,
        });
        expect((await worker.done).code).toBe(0);

        const runs = await runCli(["runs", "--json"], { env, cwd: dir });
        expect(statusOf(runs.stdout, `${t.prefix}-1`)).toMatch(
          /^dead-lettered: The generator model call failed: .*503/,
        );
        expect(statusOf(runs.stdout, `${t.prefix}-2`)).toBe("failed");
        expect(statusOf(runs.stdout, `${t.prefix}-3`)).toBe("cancelled");
        const requests = (n: number) => stub.requests.filter((request) => taskNumberOf(request) === n).length;
        // The first delivery and one retry each asked once; the failed run asked once, the cancelled one never.
        expect([requests(1), requests(2), requests(3)]).toEqual([2, 1, 0]);
      }, 120_000);
    });

    describe("cancelling a running run from the command line", () => {
      const t = queueTest("cancel_cli");
      afterAll(() => t.cleanUp());

      it("stops the worker's run at once, keeping its checkpoints", async () => {
        // The first program is slow to arrive; by the time it does, the job is cancelled.
        const stub = await startOpenAIStub(() => ({ content: fence("print(1 / 0)"), delayMs: 10_000 }));
        const env = { OPENAI_BASE_URL: stub.url, SELFHEAL_POSTGRES_URL: url, SELFHEAL_QUEUE_SCHEMA: t.schema };
        const dir = scratchDir("queue-cancel");
        const thread = `${t.prefix}-1`;
        const worker = startCli(["worker", "--json", "--poll-interval", "0.5", "--heartbeat", "0.5"], {
          env,
          cwd: dir,
        });
        let out = "";
        worker.child.stdout?.on("data", (chunk) => (out += chunk));
        try {
          await runCli(["submit", scriptedTask(1), "--thread", thread, "--sandbox", "process"], { env, cwd: dir });
          // Its stderr in the message: a worker that failed to start says why there.
          await waitFor(() => stub.requests.length === 1, "the generator's request", 30_000).catch((error: Error) => {
            throw new Error(`${error.message}; worker said: ${worker.stderr()}`);
          });
          expect((await runCli(["cancel", thread], { env, cwd: dir })).stdout).toBe(`cancelled ${thread}\n`);
          await waitFor(() => out.includes('"event":"cancelled"'), "the worker to stop the run", 30_000);
          const runs = await runCli(["runs", "--json"], { env, cwd: dir });
          expect(statusOf(runs.stdout, thread)).toBe("cancelled");
          const history = await runCli(["history", thread], { env, cwd: dir });
          expect(history.stdout).toContain("generator");
          expect(stub.requests).toHaveLength(1);
        } finally {
          worker.child.kill("SIGTERM");
          await worker.done;
          await stub.close();
        }
      }, 120_000);
    });

    async function query<T extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<T[]> {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        return (await client.query<T>(text, values)).rows;
      } finally {
        await client.end();
      }
    }
  },
);

function statusOf(runsJson: string, threadId: string): string | undefined {
  return (JSON.parse(runsJson) as Array<{ threadId: string; status: string }>).find((row) => row.threadId === threadId)
    ?.status;
}
