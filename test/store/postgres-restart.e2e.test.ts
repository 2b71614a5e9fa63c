import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, runCli, startCli, waitFor } from "../helpers/cli-helpers.js";
import { type OpenAIStub, startOpenAIStub } from "../helpers/openai-stub.js";
import {
  POSTGRES_MISSING,
  queueSchemaName,
  scriptedTask,
  taskNumberOf,
  twoAttemptAnswer,
  workerLines,
} from "../helpers/queue-helpers.js";
import { scratchDir } from "../helpers/scratch.js";

/**
 * A real restart of a real server: PostgreSQL's own tooling (`pg_ctlcluster ... restart -m fast`,
 * which ends every session with "terminating connection due to administrator command"), on a
 * cluster of this test's own made with the CI's PostgreSQL installation, so that the other test
 * files, which share the CI's main cluster, are not cut off in the middle of their own work.
 */
const CLUSTER = `selfheal-restart-${process.pid}`;

function postgresVersion(): string {
  const versions = execFileSync("ls", ["/etc/postgresql"], { encoding: "utf8" }).trim().split("\n");
  return versions.sort((a, b) => Number(a) - Number(b)).at(-1) ?? "";
}

function asPostgres(sql: string, port: number): void {
  execFileSync(
    "runuser",
    ["-u", "postgres", "--", "psql", "-q", "-p", String(port), "-v", "ON_ERROR_STOP=1", "-c", sql],
    {
      cwd: "/",
      stdio: "pipe",
    },
  );
}

describe.skipIf(POSTGRES_MISSING !== null)(
  `a PostgreSQL restart under running work${POSTGRES_MISSING ? ` (skipped: ${POSTGRES_MISSING})` : ""}`,
  () => {
    const version = postgresVersion();
    let port: number;
    let url: string;
    let stub: OpenAIStub;

    beforeAll(async () => {
      port = await freePort();
      execFileSync("pg_createcluster", [version, CLUSTER, "--port", String(port), "--start"], { stdio: "pipe" });
      asPostgres("CREATE ROLE selfheal_restart LOGIN PASSWORD 'selfheal'", port);
      asPostgres("CREATE DATABASE selfheal_restart OWNER selfheal_restart", port);
      url = `postgresql://selfheal_restart:selfheal@127.0.0.1:${port}/selfheal_restart`;
      stub = await startOpenAIStub((request) => twoAttemptAnswer(request, 800));
    }, 120_000);
    afterAll(async () => {
      await stub?.close();
      execFileSync("pg_dropcluster", [version, CLUSTER, "--stop"], { stdio: "pipe" });
    }, 120_000);

    it("carries a CLI run and a worker's four queued runs through `pg_ctlcluster restart -m fast`", async () => {
      const schema = queueSchemaName("restart");
      const env = { OPENAI_BASE_URL: stub.url, SELFHEAL_POSTGRES_URL: url, SELFHEAL_QUEUE_SCHEMA: schema };
      const dir = scratchDir("postgres-restart");
      const file = join(dir, "tasks.jsonl");
      writeFileSync(
        file,
        [1, 2, 3, 4].map((n) => JSON.stringify({ task: scriptedTask(n), thread: `${schema}-${n}` })).join("\n"),
      );
      const submitted = await runCli(["submit", "--file", file, "--sandbox", "process"], { env, cwd: dir });
      expect(submitted.stderr).toBe("");
      const cli = startCli(["run", scriptedTask(100), "--sandbox", "process", "--json"], { env, cwd: dir });
      const worker = startCli(["worker", "--json", "--until-empty", "--poll-interval", "0.5"], { env, cwd: dir });
      await waitFor(
        () => stub.requests.some((request) => taskNumberOf(request) === 100) && stub.requests.length >= 3,
        "both mid-way",
      );
      execFileSync("pg_ctlcluster", [version, CLUSTER, "restart", "-m", "fast"], { stdio: "pipe" });

      const [ran, worked] = await Promise.all([cli.done, worker.done]);
      expect(ran.code, ran.stderr).toBe(0);
      expect(JSON.parse(ran.stdout)).toMatchObject({ status: "passed", attempt: 2 });
      expect(worked.code, worked.stderr).toBe(0);
      for (const result of [ran, worked]) expect(result.stderr).not.toMatch(/\n\s+at /);
      // The restart reached them: the worker's idle connections were ended by the administrator.
      expect(worked.stderr).toMatch(
        /selfheal queue: the database is away \(terminating connection due to administrator command/,
      );
      expect(worked.stderr).toContain("selfheal queue: the database answered again");
      const finished = workerLines(worked.stdout).filter((line) => line.event === "finished");
      expect(finished.map((line) => `${line.threadId} ${line.status}`).sort()).toEqual(
        [1, 2, 3, 4].map((n) => `${schema}-${n} passed`),
      );
      // Each run's generator and fixer calls, and at most one repeated for a step the restart interrupted.
      for (const n of [1, 2, 3, 4, 100]) {
        const requests = stub.requests.filter((request) => taskNumberOf(request) === n);
        expect(new Set(requests.map((request) => JSON.stringify(request.messages))).size, `task ${n}`).toBe(2);
        expect(requests.length, `task ${n}`).toBeLessThanOrEqual(3);
      }
    }, 180_000);
  },
);
