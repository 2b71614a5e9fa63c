import { afterAll, describe, expect, it } from "vitest";
import { TaskQueue } from "../../src/queue/index.js";
import { waitFor } from "../helpers/cli-helpers.js";
import {
  cleanUpQueueTest,
  POSTGRES_MISSING,
  POSTGRES_URL,
  queueSchemaName,
  scriptedTask,
  waitUntil,
} from "../helpers/queue-helpers.js";

const FAST = { retryLimit: 2, retryDelaySeconds: 1, expireInSeconds: 30 };
const WORK = { concurrency: 1, pollingIntervalSeconds: 0.5, heartbeatSeconds: 1 };

describe.skipIf(POSTGRES_MISSING !== null)(
  `the queue's job slots${POSTGRES_MISSING ? ` (skipped: ${POSTGRES_MISSING})` : ""}`,
  () => {
    const url = POSTGRES_URL ?? "";
    const schema = queueSchemaName("slots");
    const prefix = `${schema}-thread`;
    const opened: TaskQueue[] = [];
    const open = async () => {
      const queue = await TaskQueue.open({ url, schema }, { maintenanceIntervalSeconds: 1 });
      opened.push(queue);
      return queue;
    };
    afterAll(async () => {
      for (const queue of opened) await queue.close(1000).catch(() => undefined);
      await cleanUpQueueTest(url, schema, prefix);
    });

    it("completes each finished job with its handler's output, one after another on one slot", async () => {
      const queue = await open();
      const threads = [1, 2, 3].map((n) => `${prefix}-done-${n}`);
      await queue.submit(
        threads.map((threadId, n) => ({ threadId, input: { task: scriptedTask(n + 1) } })),
        FAST,
      );
      const taking = await queue.work(WORK, async (delivery) => ({ ran: delivery.data.threadId }));
      await waitUntil(async () => (await queue.pendingCount()) === 0, "three completions", 20_000);
      await taking.stop();
      const runs = (await queue.list()).filter((run) => threads.includes(run.threadId));
      expect(runs.map((run) => [run.state, run.output])).toEqual(
        threads.map((thread) => ["finished", { ran: thread }]),
      );
    });

    it("fails a job still running when its queue closes, so that it is delivered again before its expiry", async () => {
      const first = await open();
      const threadId = `${prefix}-stranded`;
      await first.submit([{ threadId, input: { task: scriptedTask(4) } }], FAST);
      let started = false;
      // A handler that ignores its signal: the grace runs out with the job still held.
      await first.work(WORK, async () => {
        started = true;
        await new Promise((resolve) => setTimeout(resolve, 3_000));
        return {};
      });
      await waitFor(() => started, "the first delivery", 10_000);
      await first.close(500);
      const second = await open();
      const [run] = (await second.list()).filter((listed) => listed.threadId === threadId);
      expect(run).toMatchObject({
        state: "queued",
        reason: "the worker shut down while the job was running",
      });

      const delivered: string[] = [];
      await second.work(WORK, async (delivery) => {
        delivered.push(delivery.data.threadId);
        return {};
      });
      await waitFor(() => delivered.length === 1, "the second delivery", 10_000);
      expect(delivered).toEqual([threadId]);
    });
  },
);
