import pg from "pg";
import { postgresMissing } from "./capabilities.js";
import { fence } from "./helpers.js";
import type { StubAnswer, StubRequest } from "./openai-stub.js";

/**
 * .ci/run starts PostgreSQL and exports this URL; without it the queue tests are skipped, and say
 * so, except under SELFHEAL_TEST_REQUIRE_POSTGRES=1, where the test file fails.
 */
export const POSTGRES_MISSING = postgresMissing();
export const POSTGRES_URL = process.env.SELFHEAL_TEST_POSTGRES_URL;

/** A schema of its own for each test run, so runs never see each other's jobs; dropped after. */
export function queueSchemaName(label: string): string {
  return `selfheal_test_${label}_${process.pid}_${Date.now()}`;
}

/** Drops the test's queue schema and every store row of its threads (the store's tables are shared). */
export async function cleanUpQueueTest(url: string, schema: string, threadPrefix: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    for (const table of ["selfheal_runs", "checkpoints", "checkpoint_blobs", "checkpoint_writes"]) {
      const exists = await client.query<{ found: string | null }>("SELECT to_regclass($1) AS found", [table]);
      if (exists.rows[0]?.found)
        await client.query(`DELETE FROM ${table} WHERE thread_id LIKE $1`, [`${threadPrefix}%`]);
    }
  } finally {
    await client.end();
  }
}

/** "Task 7: ..." -> 7: which scripted task a model request belongs to, from the task text in its prompt. */
export function taskNumberOf(request: StubRequest): number {
  const match = request.messages
    .map((message) => message.content)
    .join("\n")
    .match(/Task (\d+):/);
  if (!match) throw new Error("a model request without a task number");
  return Number(match[1]);
}

export function scriptedTask(n: number): string {
  return `Task ${n}: print ${n} divided by itself.`;
}

/**
 * Every scripted task takes two attempts: the first program divides by zero, the fix (asked for
 * with the traceback in the prompt) passes. Replies are a little slow so that runs are caught mid-way.
 */
export function twoAttemptAnswer(request: StubRequest, delayMs = 150): StubAnswer {
  const n = taskNumberOf(request);
  const isFix = request.messages.some((message) => message.content.includes("ZeroDivisionError"));
  const code = isFix ? `print(${n} / ${n})` : `print(${n} / 0)`;
  return {
    content: fence(code),
    usage: { prompt_tokens: isFix ? 130 : 100, completion_tokens: 20 },
    delayMs,
  };
}

/** Like waitFor, for a condition that has to ask the database. */
export async function waitUntil(condition: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** One line of `selfheal worker --json`. */
export interface WorkerLine {
  worker: string;
  event: string;
  threadId: string;
  status?: string;
}

/** The JSON lines of a worker's stdout. */
export function workerLines(stdout: string): WorkerLine[] {
  return stdout
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as WorkerLine);
}
