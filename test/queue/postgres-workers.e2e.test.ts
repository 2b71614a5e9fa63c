import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgent, createSandbox, parseSettings } from "../../src/index.js";
import { forkCheckpoint, openRunStore, type RunStore, ThreadBusyError } from "../../src/store/index.js";
import { postgresMissing } from "../helpers/capabilities.js";
import { runCli, startCli, waitFor } from "../helpers/cli-helpers.js";
import { fence, scriptedModel } from "../helpers/helpers.js";
import { type OpenAIStub, startOpenAIStub } from "../helpers/openai-stub.js";
import { scratchDir } from "../helpers/scratch.js";

// .ci/run installs and starts PostgreSQL and exports this URL; on a machine without it these
// tests are skipped, and say so (they fail instead under SELFHEAL_TEST_REQUIRE_POSTGRES=1).
const POSTGRES_URL = process.env.SELFHEAL_TEST_POSTGRES_URL;
const POSTGRES_MISSING = postgresMissing();

describe.skipIf(POSTGRES_MISSING !== null)(
  `PostgreSQL: many workers share runs${POSTGRES_MISSING ? ` (skipped: ${POSTGRES_MISSING})` : ""}`,
  () => {
    const url = POSTGRES_URL ?? "";
    let store: RunStore;
    beforeAll(async () => {
      store = await openRunStore({ kind: "postgres", url });
    });
    afterAll(() => store?.close());

    it("lets a second worker, in another directory, finish a run whose first worker was killed", async () => {
      const stub: OpenAIStub = await startOpenAIStub((_request, index) => {
        if (index === 0)
          return { content: fence("print(7 / 0)"), usage: { prompt_tokens: 100, completion_tokens: 20 } };
        if (index === 1) return { content: fence("print(7 / 7)"), delayMs: 120_000 };
        return { content: fence("print(7 / 7)"), usage: { prompt_tokens: 130, completion_tokens: 20 } };
      });
      try {
        const env = { OPENAI_BASE_URL: stub.url, SELFHEAL_POSTGRES_URL: url };
        const thread = `pg-workers-${Date.now()}`;
        const first = startCli(["run", "Print seven divided by itself.", "--thread", thread, "--sandbox", "process"], {
          env,
          cwd: scratchDir("worker-1"),
        });
        const secondDir = scratchDir("worker-2");
        await waitFor(() => stub.requests.length === 2, "the first worker's fixer call");

        // While the first worker is alive it holds the thread.
        const refused = await runCli(["resume", thread], { env, cwd: secondDir });
        expect(refused.code).toBe(2);
        expect(refused.stderr).toContain(`thread ${thread} is being run by another worker`);

        first.child.kill("SIGKILL");
        expect((await first.done).code).toBeNull();

        const second = await runCli(["resume", thread, "--json"], { env, cwd: secondDir });
        expect(second.code).toBe(0);
        expect(JSON.parse(second.stdout)).toMatchObject({
          status: "passed",
          attempt: 2,
          threadId: thread,
          usage: { calls: 2 },
        });
        expect(stub.requests).toHaveLength(3);
        expect(stub.requests[2]?.messages).toEqual(stub.requests[1]?.messages);

        const runs = await runCli(["runs", "--json", "--postgres", url], { env, cwd: secondDir });
        expect(JSON.parse(runs.stdout)).toContainEqual(
          expect.objectContaining({ threadId: thread, status: "passed", attempts: 2, tokens: 270 }),
        );
      } finally {
        await stub.close();
      }
    });

    it("forks a thread stored in PostgreSQL, copying every channel's value", async () => {
      const sandbox = createSandbox({ kind: "process" });
      const thread = `pg-fork-${Date.now()}`;
      const settings = parseSettings({});
      try {
        const original = createAgent({
          model: scriptedModel(fence("print(1 / 0)"), fence("print('fixed once')")),
          sandbox,
          checkpointer: store.checkpointer,
        });
        await original.invoke({ task: "Print a line." }, { context: settings, configurable: { thread_id: thread } });
        let afterFailure: string | undefined;
        for await (const snapshot of original.getStateHistory({ configurable: { thread_id: thread } })) {
          if (snapshot.next.includes("fixer")) afterFailure = snapshot.config.configurable?.checkpoint_id;
        }
        expect(afterFailure).toBeDefined();

        await forkCheckpoint(store.checkpointer, { threadId: thread, checkpointId: afterFailure! }, `${thread}-b`);
        const forkAgent = createAgent({
          model: scriptedModel(fence("print('fixed another way')")),
          sandbox,
          checkpointer: store.checkpointer,
        });
        const forked = await forkAgent.invoke(null, { context: settings, configurable: { thread_id: `${thread}-b` } });
        expect(forked).toMatchObject({ status: "passed", attempt: 2, task: "Print a line." });
        expect(forked.lastRun?.stdout).toBe("fixed another way\n");
        expect(forked.errors).toEqual([expect.objectContaining({ type: "ZeroDivisionError", count: 1 })]);

        const originalState = await original.getState({ configurable: { thread_id: thread } });
        expect(originalState.values.lastRun?.stdout).toBe("fixed once\n");
      } finally {
        await sandbox.close();
      }
    });

    it("gives a thread to one worker at a time, and frees it when that worker lets go", async () => {
      const other = await openRunStore({ kind: "postgres", url });
      try {
        const lease = await store.lease("pg-lease");
        await expect(other.lease("pg-lease")).rejects.toBeInstanceOf(ThreadBusyError);
        await lease.release();
        const taken = await other.lease("pg-lease");
        await taken.release();
      } finally {
        await other.close();
      }
    });
  },
);
