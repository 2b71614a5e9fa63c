import { execFileSync, spawn } from "node:child_process";
import { statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { type CallToolResult, CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import pg from "pg";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { BIN, type CliResult, cleanEnv, type RunningCli, runCli, startCli, waitFor } from "../helpers/cli-helpers.js";
import { type OpenAIStub, type StubRequest, startOpenAIStub } from "../helpers/openai-stub.js";
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
import { TcpProxy } from "../helpers/tcp-proxy.js";

/** Queued tasks 1..12; the CLI runs are tasks 100 and 101, the MCP solve task 200. */
const QUEUED = 12;
const CLI_TASK = 100;
const CLI_SHORT_WAIT_TASK = 101;
const MCP_TASK = 200;

/** The model requests of one task, by its number. */
function requestsOf(stub: OpenAIStub, n: number): StubRequest[] {
  return stub.requests.filter((request) => taskNumberOf(request) === n);
}

/**
 * Every task of a scenario takes two model calls (its generator's and its fixer's). A step that was
 * in flight when the database went away may make its call again, once; no other call repeats.
 */
function expectCallsOfOneRun(stub: OpenAIStub, n: number, interruptedSteps = 0): void {
  const requests = requestsOf(stub, n);
  expect(new Set(requests.map((request) => JSON.stringify(request.messages))).size, `task ${n}`).toBe(2);
  expect(requests.length, `task ${n}`).toBeGreaterThanOrEqual(2);
  expect(requests.length, `task ${n}`).toBeLessThanOrEqual(2 + interruptedSteps);
}

describe.skipIf(POSTGRES_MISSING !== null)(
  `the run store goes away and comes back${POSTGRES_MISSING ? ` (skipped: ${POSTGRES_MISSING})` : ""}`,
  () => {
    const url = POSTGRES_URL ?? "";
    const target = new URL(url || "postgresql://localhost:5432/none");
    const schemas: string[] = [];
    let proxy: TcpProxy;
    let stub: OpenAIStub;

    beforeEach(async () => {
      proxy = await TcpProxy.start({ host: target.hostname, port: Number(target.port || 5432) });
      // Replies a little slow, so every run is mid-way when the database goes.
      stub = await startOpenAIStub((request) => twoAttemptAnswer(request, 600));
    });
    afterEach(async () => {
      await stub.close();
      await proxy.close();
    });
    afterAll(async () => {
      for (const schema of schemas) await cleanUpQueueTest(url, schema, `${schema}-`);
    });

    /**
     * One CLI run, three workers with twelve queued runs and one MCP `solve`, all on the store through
     * the proxy; `disrupt` breaks the database once they are all mid-way. Returns what each printed.
     */
    async function throughAnOutage(
      label: string,
      disrupt: () => Promise<void>,
      options: { extraCliRuns?: string[][]; submitArgs?: string[] } = {},
    ) {
      const schema = queueSchemaName(label);
      schemas.push(schema);
      const through = TcpProxy.through(url, proxy);
      const env = { OPENAI_BASE_URL: stub.url, SELFHEAL_POSTGRES_URL: through, SELFHEAL_QUEUE_SCHEMA: schema };
      const dir = scratchDir(`outage-${label}`);
      const file = join(dir, "tasks.jsonl");
      writeFileSync(
        file,
        Array.from({ length: QUEUED }, (_, i) =>
          JSON.stringify({ task: scriptedTask(i + 1), thread: `${schema}-${i + 1}` }),
        ).join("\n"),
      );
      const submitted = await runCli(
        ["submit", "--file", file, "--sandbox", "process", ...(options.submitArgs ?? [])],
        {
          env,
          cwd: dir,
        },
      );
      expect(submitted.stderr).toBe("");

      const cliRuns: RunningCli[] = [[], ...(options.extraCliRuns ?? [])].map((args, index) =>
        startCli(
          [
            "run",
            scriptedTask(CLI_TASK + index),
            "--thread",
            `${schema}-cli-${index}`,
            "--sandbox",
            "process",
            "--json",
            ...args,
          ],
          { env, cwd: dir },
        ),
      );
      const workers = Array.from({ length: 3 }, () =>
        startCli(["worker", "--json", "--until-empty", "--poll-interval", "0.5", "--heartbeat", "1"], {
          env,
          cwd: dir,
        }),
      );
      const mcp = new Client({ name: "selfheal-outage-test", version: "1.0.0" });
      const warnings: string[] = [];
      mcp.setNotificationHandler(
        (await import("@modelcontextprotocol/sdk/types.js")).LoggingMessageNotificationSchema,
        (notification) => {
          if (notification.params.level === "warning") warnings.push(String(notification.params.data));
        },
      );
      await mcp.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [BIN, "mcp"],
          env: cleanEnv(env) as Record<string, string>,
          cwd: dir,
          stderr: "pipe",
        }),
      );
      const solved = mcp.callTool(
        {
          name: "solve",
          arguments: { task: scriptedTask(MCP_TASK), threadId: `${schema}-mcp`, settings: { sandbox: "process" } },
        },
        CallToolResultSchema,
        { timeout: 240_000 },
      ) as Promise<CallToolResult>;

      // Everyone mid-way: the CLI runs, the MCP solve and some queued runs have each had a reply.
      await waitFor(
        () =>
          requestsOf(stub, CLI_TASK).length >= 1 && requestsOf(stub, MCP_TASK).length >= 1 && stub.requests.length >= 8,
        "every run mid-way",
      );
      await disrupt();
      const [cli, workerResults, mcpResult] = await Promise.all([
        Promise.all(cliRuns.map((run) => run.done)),
        Promise.all(workers.map((worker) => worker.done)),
        solved,
      ]);
      await mcp.close();
      return { schema, env, dir, cli, workers: workerResults, mcp: mcpResult, mcpWarnings: warnings };
    }

    /** What every scenario ends with: each run passed exactly once, no process gave up on its own. */
    async function expectEveryRunPassedOnce(
      outcome: Awaited<ReturnType<typeof throughAnOutage>>,
      cli: CliResult,
    ): Promise<void> {
      expect(cli.code, cli.stderr).toBe(0);
      expect(JSON.parse(cli.stdout)).toMatchObject({ status: "passed", attempt: 2 });
      expect(cli.stderr).not.toMatch(/\n\s+at /);
      expectCallsOfOneRun(stub, CLI_TASK, 1);

      for (const worker of outcome.workers) {
        expect(worker.code, worker.stderr).toBe(0);
        expect(worker.stderr).not.toMatch(/\n\s+at /);
      }
      const finished = outcome.workers
        .flatMap((worker) => workerLines(worker.stdout))
        .filter((line) => line.event === "finished");
      expect(finished.map((line) => `${line.threadId} ${line.status}`).sort()).toEqual(
        Array.from({ length: QUEUED }, (_, i) => `${outcome.schema}-${i + 1} passed`).sort(),
      );
      for (let n = 1; n <= QUEUED; n++) expectCallsOfOneRun(stub, n, 1);
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      const jobs = await client
        .query<{ state: string; count: string }>(
          `SELECT state, count(*) FROM ${outcome.schema}.job WHERE name = 'selfheal-runs' GROUP BY state`,
        )
        .finally(() => client.end());
      expect(jobs.rows).toEqual([{ state: "completed", count: String(QUEUED) }]);

      expect(outcome.mcp.isError, JSON.stringify(outcome.mcp.content)).toBeFalsy();
      expect(outcome.mcp.structuredContent).toMatchObject({ status: "passed", attempts: 2 });
      expectCallsOfOneRun(stub, MCP_TASK, 1);
    }

    it("carries every run through a cut of a few seconds: CLI, three workers with twelve runs, MCP", async () => {
      const outcome = await throughAnOutage("cut", async () => {
        proxy.refuse();
        await new Promise((resolve) => setTimeout(resolve, 4_000));
        proxy.heal();
      });
      const [cli] = outcome.cli;
      await expectEveryRunPassedOnce(outcome, cli!);
      // The CLI said once what it waited for, and that the store came back.
      expect(cli!.stderr.match(/waiting for the run store/g)?.length ?? 0).toBeLessThanOrEqual(1);
      if (cli!.stderr.includes("waiting for the run store")) expect(cli!.stderr).toContain("answered again");
    });

    it("waits out a 30-second outage; jobs whose lease lapsed are taken once; a run with a shorter storeWaitSeconds stops resumable, then resumes to pass", async () => {
      const outcome = await throughAnOutage(
        "outage",
        async () => {
          proxy.refuse();
          await new Promise((resolve) => setTimeout(resolve, 30_000));
          proxy.heal();
        },
        // The jobs in flight outlive their 10-second lease during the outage: each is taken again
        // afterwards, by exactly one worker, and goes on from its last checkpoint.
        { extraCliRuns: [["--store-wait", "5"]], submitArgs: ["--expire-in", "10", "--retry-delay", "1"] },
      );
      const [cli, shortWait] = outcome.cli;
      await expectEveryRunPassedOnce(outcome, cli!);
      expect(cli!.stderr).toContain("waiting for the run store");
      expect(cli!.stderr).toMatch(/the run store answered again after (2\d|3\d)\.\d s/);
      expect(outcome.mcpWarnings.some((line) => line.startsWith("waiting for the run store"))).toBe(true);
      const workerLog = outcome.workers.map((worker) => worker.stderr).join("");
      expect(workerLog.match(/selfheal queue: the database is away/g)?.length).toBe(3);
      expect(workerLog.match(/selfheal queue: the database answered again/g)?.length).toBe(3);

      // The lease lapse happened: some job was delivered again (and still finished once, above).
      const starts = outcome.workers
        .flatMap((worker) => workerLines(worker.stdout))
        .filter((line) => line.event === "started")
        .map((line) => line.threadId);
      expect(starts.length).toBeGreaterThan(new Set(starts).size);

      // Past its bound: stopped, saved, and the line that continues it.
      expect(shortWait!.code, shortWait!.stderr).toBe(75);
      expect(shortWait!.stderr).toContain("did not answer for 5 s");
      const thread = `${outcome.schema}-cli-1`;
      expect(shortWait!.stderr).toContain(`continue it with \`node ${BIN} resume ${thread}\``);
      expect(shortWait!.stderr).not.toMatch(/\n\s+at /);
      const resumed = await runCli(["resume", thread, "--json"], { env: outcome.env, cwd: outcome.dir });
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(JSON.parse(resumed.stdout)).toMatchObject({ status: "passed", attempt: 2, usage: { calls: 2 } });
      expectCallsOfOneRun(stub, CLI_SHORT_WAIT_TASK, 1);
    }, 240_000);

    it("waits out a stall (connections accepted, nothing answered) and goes on where it was", async () => {
      const outcome = await throughAnOutage("stall", async () => {
        proxy.stall();
        await new Promise((resolve) => setTimeout(resolve, 8_000));
        proxy.heal();
      });
      await expectEveryRunPassedOnce(outcome, outcome.cli[0]!);
    }, 180_000);

    it("answers runs, report, resume and cancel with one line while the database is down, and MCP's tools too", async () => {
      const through = TcpProxy.through(url, proxy);
      const env = { SELFHEAL_POSTGRES_URL: through, SELFHEAL_QUEUE_SCHEMA: queueSchemaName("down") };
      const mcp = new Client({ name: "selfheal-outage-test", version: "1.0.0" });
      await mcp.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [BIN, "mcp"],
          env: cleanEnv({ ...env, OPENAI_BASE_URL: stub.url }) as Record<string, string>,
          cwd: scratchDir("mcp-down"),
          stderr: "pipe",
        }),
      );
      proxy.refuse();
      for (const [name, args] of [
        ["list_runs", {}],
        ["run_history", { threadId: "some-thread" }],
      ] as const) {
        const answer = (await mcp.callTool({ name, arguments: args }, CallToolResultSchema)) as CallToolResult;
        expect(answer.isError, name).toBe(true);
        const text = answer.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("\n");
        expect(text.split("\n"), name).toHaveLength(1);
        expect(text, name).toMatch(/run store|Connection terminated|ECONNRE/);
      }
      await mcp.close();
      for (const args of [["runs"], ["report", "some-thread"], ["resume", "some-thread"], ["cancel", "some-thread"]]) {
        const result = await runCli(args, { env });
        expect(result.code, `${args[0]}: ${result.stderr}`).not.toBe(0);
        expect(result.stderr.trim().split("\n"), args[0]).toHaveLength(1);
        expect(result.stderr, args[0]).toMatch(/^selfheal: .*(PostgreSQL|run store)/);
      }
      proxy.stall();
      const stalled = await runCli(["runs"], { env });
      expect(stalled.stderr.trim().split("\n")).toHaveLength(1);
      expect(stalled.stderr).toMatch(/^selfheal: .*PostgreSQL/);
      proxy.heal();
    });
  },
);

/** Another process holding SQLite's write lock on `path` until `release()` (python3's sqlite3, as any other program would). */
async function holdWriteLock(path: string): Promise<{ release(): Promise<void> }> {
  const holder = spawn(
    "python3",
    [
      "-c",
      "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1], isolation_level=None)\nc.execute('BEGIN EXCLUSIVE')\nprint('locked', flush=True)\nsys.stdin.read()\nc.execute('COMMIT')\n",
      path,
    ],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  let said = "";
  holder.stdout.on("data", (chunk) => (said += chunk));
  await waitFor(() => said.includes("locked"), "the write lock");
  return {
    async release() {
      holder.stdin.end();
      await new Promise((resolve) => holder.once("exit", resolve));
    },
  };
}

describe("a SQLite store whose file another process holds locked", () => {
  let stub: OpenAIStub;
  beforeEach(async () => {
    stub = await startOpenAIStub((request) => twoAttemptAnswer(request, 300));
  });
  afterEach(() => stub.close());

  async function runWhileLocked(lockedMs: number, extraArgs: string[] = []) {
    const dir = scratchDir("sqlite-locked");
    const db = join(dir, "runs.db");
    const env = { OPENAI_BASE_URL: stub.url };
    const thread = `sqlite-locked-${Date.now()}`;
    const run = startCli(
      ["run", scriptedTask(CLI_TASK), "--thread", thread, "--db", db, "--sandbox", "process", "--json", ...extraArgs],
      { env, cwd: dir },
    );
    await waitFor(() => requestsOf(stub, CLI_TASK).length >= 1, "the first model call");
    const lock = await holdWriteLock(db);
    await new Promise((resolve) => setTimeout(resolve, lockedMs));
    await lock.release();
    return { result: await run.done, db, dir, env, thread };
  }

  it("waits for the lock, says so once, and goes on", async () => {
    const { result } = await runWhileLocked(6_000);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ status: "passed", attempt: 2 });
    expect(result.stderr.match(/waiting for the run store \(.*\): database is locked/g)).toHaveLength(1);
    expect(result.stderr).toContain("the run store answered again");
    expectCallsOfOneRun(stub, CLI_TASK);
  });

  it("waits while its file cannot grow (a full disk, here the process's file-size limit), and goes on once it can", async () => {
    const dir = scratchDir("sqlite-full");
    const db = join(dir, "runs.db");
    const run = startCli(
      ["run", scriptedTask(CLI_TASK), "--thread", "sqlite-full", "--db", db, "--sandbox", "process", "--json"],
      { env: { OPENAI_BASE_URL: stub.url }, cwd: dir },
    );
    await waitFor(() => requestsOf(stub, CLI_TASK).length >= 1, "the first model call");
    // Writes past the log's present end fail (EFBIG, as ENOSPC would on a full disk); pipes are not files.
    const pid = String(run.child.pid);
    execFileSync("prlimit", ["--pid", pid, `--fsize=${statSync(`${db}-wal`).size}:unlimited`]);
    await waitFor(() => run.stderr().includes("waiting for the run store"), "the run waiting for its store");
    execFileSync("prlimit", ["--pid", pid, "--fsize=unlimited:unlimited"]);
    const result = await run.done;
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ status: "passed", attempt: 2 });
    expect(result.stderr).toMatch(/waiting for the run store \(.*\): disk I\/O error \(SQLITE_IOERR_WRITE\)/);
    expect(result.stderr).toContain("the run store answered again");
    expectCallsOfOneRun(stub, CLI_TASK);
  });

  it("past storeWaitSeconds stops resumable with the reason, and resumes to pass once the lock is gone", async () => {
    const { result, db, dir, env, thread } = await runWhileLocked(8_000, ["--store-wait", "2"]);
    expect(result.code, result.stderr).toBe(75);
    expect(result.stderr).toMatch(/did not answer for 2 s while .* \(database is locked/);
    expect(result.stderr).toContain(`continue it with \`node ${BIN} resume ${thread} --db`);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    const resumed = await runCli(["resume", thread, "--db", db, "--json"], { env, cwd: dir });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ status: "passed", attempt: 2, usage: { calls: 2 } });
    expectCallsOfOneRun(stub, CLI_TASK, 1);
  });
});
