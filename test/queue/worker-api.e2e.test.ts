import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { type AgentState, createAgent, createChatModel, parseSettings } from "../../src/index.js";
import { startWorker, TaskQueue, type WorkerEvent } from "../../src/queue/index.js";
import { openRunStore, type RunStore } from "../../src/store/index.js";
import { waitFor } from "../helpers/cli-helpers.js";
import { fence, scriptedModel } from "../helpers/helpers.js";
import { startOpenAIStub } from "../helpers/openai-stub.js";
import {
  cleanUpQueueTest,
  POSTGRES_MISSING,
  POSTGRES_URL,
  queueSchemaName,
  scriptedTask,
  waitUntil,
} from "../helpers/queue-helpers.js";

const FAST = { retryLimit: 2, retryDelaySeconds: 1, expireInSeconds: 60 };
const POLL = { pollingIntervalSeconds: 0.5, heartbeatSeconds: 1 };

async function submit(store: RunStore, queue: TaskQueue, threadId: string, n: number): Promise<void> {
  const settings = parseSettings({ sandbox: "process", maxAttempts: 3 });
  await store.saveRun({ threadId, task: scriptedTask(n), settings, createdAt: new Date().toISOString() });
  await queue.submit([{ threadId, input: { task: scriptedTask(n) } }], FAST);
}

async function finalState(store: RunStore, threadId: string): Promise<AgentState> {
  const agent = createAgent({ checkpointer: store.checkpointer });
  return (await agent.getState({ configurable: { thread_id: threadId } })).values as AgentState;
}

describe.skipIf(POSTGRES_MISSING !== null)(
  `selfheal/queue run from code, without the CLI${POSTGRES_MISSING ? ` (skipped: ${POSTGRES_MISSING})` : ""}`,
  () => {
    const url = POSTGRES_URL ?? "";
    const schema = queueSchemaName("api");
    const prefix = `${schema}-thread`;
    afterAll(() => cleanUpQueueTest(url, schema, prefix));

    it("runs a submitted job to its end with startWorker, reporting each step, and completes the job with the outcome", async () => {
      const store = await openRunStore({ kind: "postgres", url });
      const queue = await TaskQueue.open({ url, schema }, { maintenanceIntervalSeconds: 1 });
      const threadId = `${prefix}-done`;
      const events: WorkerEvent[] = [];
      try {
        await submit(store, queue, threadId, 1);
        const worker = await startWorker(queue, {
          store,
          model: scriptedModel(fence("print(1 / 0)"), fence("print(1 / 1)")),
          ...POLL,
          onEvent: (event) => events.push(event),
        });
        try {
          await waitUntil(async () => (await queue.list(threadId))[0]?.state === "finished", "the job to finish");
        } finally {
          await worker.stop();
        }
        const [job] = await queue.list(threadId);
        expect(job?.output).toMatchObject({ threadId, status: "passed", attempts: 2 });
        const state = await finalState(store, threadId);
        expect(state.status).toBe("passed");
        expect(state.code.trim()).toBe("print(1 / 1)");
      } finally {
        await queue.close(1000);
        await store.close();
      }
      expect(events[0]).toMatchObject({ event: "started", threadId });
      expect(events.at(-1)).toMatchObject({ event: "finished", threadId, status: "passed", attempts: 2 });
      const steps = events.flatMap((event) => (event.event === "step" ? [event.node] : []));
      expect(steps).toContain("generator");
      expect(steps).toContain("fixer");
      expect(steps.filter((node) => node === "executor")).toHaveLength(2);
    }, 60_000);

    it("completes the job of a run that pauses for approval as awaiting approval, with no attempt run", async () => {
      const store = await openRunStore({ kind: "postgres", url });
      const queue = await TaskQueue.open({ url, schema }, { maintenanceIntervalSeconds: 1 });
      const threadId = `${prefix}-approval`;
      const settings = parseSettings({ sandbox: "process", approval: true });
      try {
        await store.saveRun({ threadId, task: scriptedTask(4), settings, createdAt: new Date().toISOString() });
        await queue.submit([{ threadId, input: { task: scriptedTask(4) } }], FAST);
        const worker = await startWorker(queue, { store, model: scriptedModel(fence("print(4 / 4)")), ...POLL });
        try {
          await waitUntil(async () => (await queue.list(threadId))[0]?.state === "finished", "the job to finish");
        } finally {
          await worker.stop();
        }
        expect((await queue.list(threadId))[0]?.output).toMatchObject({
          threadId,
          status: "awaiting_approval",
          attempts: 0,
        });
        expect((await finalState(store, threadId)).code.trim()).toBe("print(4 / 4)");
      } finally {
        await queue.close(1000);
        await store.close();
      }
    }, 60_000);

    it("an idle worker takes a job when it is submitted, not at its next poll", async () => {
      const store = await openRunStore({ kind: "postgres", url });
      const queue = await TaskQueue.open({ url, schema }, { maintenanceIntervalSeconds: 1 });
      const threadId = `${prefix}-announced`;
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      // A poll every 10 minutes: only the announcement can bring the job to the worker within the deadline below.
      const worker = await startWorker(queue, {
        store,
        model: scriptedModel(fence("print(5 / 5)")),
        pollingIntervalSeconds: 600,
        heartbeatSeconds: 1,
      });
      try {
        // Listening, and past its first (empty) fetch: from here on it waits out its polling interval.
        await waitUntil(async () => {
          const { rows } = await client.query(
            "SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND query = 'LISTEN selfheal_jobs' AND state = 'idle'",
            [`selfheal queue listener ${process.pid}`],
          );
          return rows.length === 1;
        }, "the worker to listen");
        await submit(store, queue, threadId, 5);
        await waitUntil(async () => (await queue.list(threadId))[0]?.state === "finished", "the job to finish");
        expect((await queue.list(threadId))[0]?.output).toMatchObject({ threadId, status: "passed", attempts: 1 });
      } finally {
        await worker.stop();
        await client.end();
        await queue.close(1000);
        await store.close();
      }
    }, 60_000);

    it("holds the runs' model calls at the shared rate bucket when given a model-call rate", async () => {
      const store = await openRunStore({ kind: "postgres", url });
      const queue = await TaskQueue.open({ url, schema }, { maintenanceIntervalSeconds: 1 });
      const threadId = `${prefix}-rated`;
      try {
        await submit(store, queue, threadId, 3);
        // Two tokens to start with and one more a minute: the run's two model calls take both.
        const worker = await startWorker(queue, {
          store,
          model: scriptedModel(fence("print(3 / 0)"), fence("print(3 / 3)")),
          modelCallRate: { perMinute: 1, burst: 2 },
          ...POLL,
        });
        try {
          await waitUntil(async () => (await queue.list(threadId))[0]?.state === "finished", "the job to finish");
        } finally {
          await worker.stop();
        }
        expect((await queue.list(threadId))[0]?.output).toMatchObject({ status: "passed", attempts: 2 });
      } finally {
        await queue.close(1000);
        await store.close();
      }
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const { rows } = await client.query<{ tokens: number }>(
          `SELECT tokens FROM ${schema}.selfheal_rate_buckets WHERE name = 'model-calls'`,
        );
        expect(rows).toHaveLength(1);
        expect(rows[0]!.tokens).toBeLessThan(1);
      } finally {
        await client.end();
      }
    }, 60_000);

    it("stops a running thread on stop(), and another worker goes on from its checkpoint without asking the generator again", async () => {
      // The generator answers at once; the fixer's answer is slow until the second worker runs.
      let fixerDelayMs = 30_000;
      const stub = await startOpenAIStub((request) => {
        const isFix = request.messages.some((message) => message.content.includes("ZeroDivisionError"));
        return {
          content: fence(isFix ? "print(2 / 2)" : "print(2 / 0)"),
          usage: { prompt_tokens: 100, completion_tokens: 20 },
          ...(isFix ? { delayMs: fixerDelayMs } : {}),
        };
      });
      const store = await openRunStore({ kind: "postgres", url });
      const queue = await TaskQueue.open({ url, schema }, { maintenanceIntervalSeconds: 1 });
      const threadId = `${prefix}-stopped`;
      const model = createChatModel("stub-model", { temperature: 0 }, { OPENAI_BASE_URL: stub.url });
      try {
        await submit(store, queue, threadId, 2);
        const first: WorkerEvent[] = [];
        const worker = await startWorker(queue, { store, model, ...POLL, onEvent: (event) => first.push(event) });
        await waitFor(() => stub.requests.length === 2, "the fixer's request", 30_000);
        await worker.stop();
        expect(first.at(-1)).toMatchObject({ event: "retrying", threadId, error: expect.stringMatching(/^stopped: /) });
        expect((await finalState(store, threadId)).attempt).toBe(1);

        fixerDelayMs = 0;
        const second: WorkerEvent[] = [];
        const next = await startWorker(queue, { store, model, ...POLL, onEvent: (event) => second.push(event) });
        try {
          await waitUntil(async () => (await queue.list(threadId))[0]?.state === "finished", "the retried job");
        } finally {
          await next.stop();
        }
        expect(second.at(-1)).toMatchObject({ event: "finished", threadId, status: "passed", attempts: 2 });
        expect(second.some((event) => event.event === "step" && event.node === "generator")).toBe(false);
        // One generator call in all; the fixer's call the stop cut short is made again, once.
        const fixes = stub.requests.filter((request) =>
          request.messages.some((message) => message.content.includes("ZeroDivisionError")),
        );
        expect([stub.requests.length - fixes.length, fixes.length]).toEqual([1, 2]);
      } finally {
        await queue.close(1000);
        await store.close();
        await stub.close();
      }
    }, 90_000);
  },
);
