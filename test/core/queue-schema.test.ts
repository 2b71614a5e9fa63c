import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { InvalidSettingsError } from "../../src/index.js";
import {
  checkSchemaName,
  DEFAULT_DELIVERY,
  readQueuedRuns,
  SharedTokenBucket,
  TaskQueue,
} from "../../src/queue/index.js";
import { cleanUpQueueTest, POSTGRES_MISSING, POSTGRES_URL, queueSchemaName } from "../helpers/queue-helpers.js";

// Never reached: the name is refused before any connection is made.
const url = "postgresql://nobody@127.0.0.1:1/none";
const injected = "public; DROP TABLE job; --";

describe("the queue's schema name, where it enters SQL", () => {
  it("accepts a plain lower-case identifier", () => {
    expect(checkSchemaName("selfheal_queue")).toBe("selfheal_queue");
  });

  it.each([injected, "Upper", "1starts_with_digit", "", "a".repeat(64), 'quo"te'])("refuses %j", (name) => {
    expect(() => checkSchemaName(name)).toThrow(InvalidSettingsError);
  });

  it("is checked by every public way in: TaskQueue.open, readQueuedRuns, SharedTokenBucket.open", async () => {
    const location = { url, schema: injected };
    await expect(TaskQueue.open(location)).rejects.toThrow(/queue schema must be/);
    await expect(readQueuedRuns(location)).rejects.toThrow(/queue schema must be/);
    await expect(SharedTokenBucket.open(url, injected, "b", { perMinute: 1, burst: 1 })).rejects.toThrow(
      /queue schema must be/,
    );
  });
});

describe.skipIf(POSTGRES_MISSING !== null)(
  `the queue's schema name after the check${POSTGRES_MISSING ? ` (skipped: ${POSTGRES_MISSING})` : ""}`,
  () => {
    const url = POSTGRES_URL ?? "";
    const schema = queueSchemaName("hostile");
    const planted = `selfheal_planted_${process.pid}`;
    const hostile = `${schema}.job; CREATE TABLE public.${planted} (x int); --`;
    afterAll(async () => {
      await cleanUpQueueTest(url, schema, `${schema}-thread`);
      await dropPlanted();
    });

    async function plantedExists(): Promise<boolean> {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const { rows } = await client.query<{ found: string | null }>("SELECT to_regclass($1) AS found", [
          `public.${planted}`,
        ]);
        return rows[0]?.found !== null;
      } finally {
        await client.end();
      }
    }

    async function dropPlanted(): Promise<void> {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query(`DROP TABLE IF EXISTS public.${planted}`).finally(() => client.end());
    }

    it("reads the name once: a location that answers a hostile name on the second read reaches no SQL", async () => {
      let reads = 0;
      const location = {
        url,
        get schema() {
          reads += 1;
          return reads === 1 ? schema : hostile;
        },
      };
      const queue = await TaskQueue.open(location, { supervise: false });
      try {
        // A caller that changes the object it passed changes nothing either, and the queue's own copy is frozen.
        expect(queue.location.schema).toBe(schema);
        expect(() => {
          (queue.location as { schema: string }).schema = hostile;
        }).toThrow(TypeError);
        await queue.submit([{ threadId: `${schema}-thread-1`, input: { task: "Print one." } }], DEFAULT_DELIVERY);
        expect(await queue.pendingCount()).toBe(1);
        expect((await queue.list()).map((job) => job.threadId)).toEqual([`${schema}-thread-1`]);
        expect(await queue.cancel([`${schema}-thread-1`])).toEqual([`${schema}-thread-1`]);
      } finally {
        await queue.close(1000);
      }
      // Read a third time, the name is the hostile one, and refused before any connection.
      await expect(readQueuedRuns(location)).rejects.toThrow(/queue schema must be/);
      expect((await readQueuedRuns({ url, schema })).map((job) => job.state)).toEqual(["cancelled"]);
      expect(await plantedExists()).toBe(false);
    }, 30_000);
  },
);
