/**
 * The queue's cost, side by side: the same tasks run directly in this process (concurrency c) and
 * through the pg-boss queue by c worker processes, for c = 1, 2 and 4. Every task is the demo's
 * two-attempt run (scripted model, real Python in the sandbox), checkpointed to the same PostgreSQL
 * store either way, so the difference is what the queue adds: submit, fetch, heartbeat, complete.
 * Prints a table and a note on more machines; asserts nothing. Needs PostgreSQL:
 *
 *   SELFHEAL_POSTGRES_URL=postgresql://... npm run bench:queue [-- --tasks 24 --sandbox process]
 *
 * `--baseline-bin ../other-checkout/bin/selfheal.js` adds rows for workers started from another
 * checkout, run in turn with this one's: a change to the queue, before and after, in one run.
 * `--rounds N` repeats every row N times, interleaved, and prints medians: on a shared machine one
 * round swings by more than the queue costs. `--warm-tasks N` (default 24) untimed tasks per slot
 * come before each row's clock, direct and queued alike. Each row also prints the CPU a task took
 * (this process and its children, PostgreSQL's processes), steadier than wall time under load.
 * Before the rows it times the queue's own parts with no run at all: empty jobs through one slot
 * (fetch, heartbeat, completion) and the heartbeat alone.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import pg from "pg";
import {
  createDemoModel,
  DEMO_FIRST_PROGRAM,
  DEMO_FIXED_PROGRAM,
  DEMO_MODEL_NAME,
  DEMO_TASK,
} from "../src/cli/demo-model.js";
import {
  createAgent,
  createSandbox,
  extractCode,
  parseSettings,
  SANDBOX_KINDS,
  type SandboxKind,
} from "../src/internal.js";
import { startHeartbeat } from "../src/queue/heartbeat.js";
import { checkSchemaName, DEFAULT_DELIVERY, RUN_QUEUE, TaskQueue } from "../src/queue/index.js";
import { openRunStore, type RunStore } from "../src/store/index.js";

const { values } = parseArgs({
  options: {
    tasks: { type: "string", default: "24" },
    workers: { type: "string", default: "1,2,4" },
    sandbox: { type: "string", default: "process" },
    "baseline-bin": { type: "string" },
    rounds: { type: "string", default: "1" },
    "warm-tasks": { type: "string", default: "24" },
  },
});
/**
 * Untimed tasks per slot before each row's clock starts, direct and queued alike. A worker is a
 * long-lived process: what a task costs it is what it costs once V8 has compiled the agent's hot
 * code, which takes a few dozen runs (measured: a fresh process's tasks 2-25 took 20 ms more each
 * than its tasks 26-49). With one warm task, a fresh worker was compared with this process, warmed
 * by every row before it, and the queue was charged for the difference.
 */
const WARM_TASKS = Number(values["warm-tasks"]);
const ROUNDS = Number(values.rounds);
const TASKS = Number(values.tasks);
const WORKER_COUNTS = values.workers.split(",").map(Number);
const SANDBOX = values.sandbox as SandboxKind;
if (!SANDBOX_KINDS.includes(SANDBOX)) throw new Error(`--sandbox must be one of ${SANDBOX_KINDS.join(", ")}`);
const DB_URL = process.env.SELFHEAL_POSTGRES_URL ?? process.env.SELFHEAL_TEST_POSTGRES_URL;
if (!DB_URL) {
  console.error("bench:queue needs PostgreSQL: set SELFHEAL_POSTGRES_URL");
  process.exit(2);
}
const BIN = fileURLToPath(new URL("../bin/selfheal.js", import.meta.url));
const BASELINE_BIN = values["baseline-bin"];
const SCHEMA = `selfheal_bench_${process.pid}`;
const PREFIX = `${SCHEMA}-`;
const settings = parseSettings({ model: DEMO_MODEL_NAME, sandbox: SANDBOX });

interface Row {
  way: string;
  workers: number;
  wallMs: number;
  tasksPerSecond: number;
  /** Wall time times parallel slots, per task: what one task costs a slot. */
  slotMsPerTask: number;
  /** Queue rows: a job's time from fetch to complete (pg-boss's started_on to completed_on), per task. */
  activeMsPerTask?: number;
  /** Queue rows: from the first timed job's send to its fetch by an idle worker (pg-boss's polling, or the announcement). */
  firstFetchMs?: number;
  /** CPU time per task of this process, its children (workers, interpreters) and PostgreSQL's processes. */
  cpuMsPerTask?: number;
}

function row(way: string, workers: number, wallMs: number, jobs?: JobTimes, cpuMs?: number): Row {
  return {
    way,
    workers,
    wallMs,
    tasksPerSecond: TASKS / (wallMs / 1000),
    slotMsPerTask: (wallMs * workers) / TASKS,
    ...jobs,
    ...(cpuMs === undefined ? {} : { cpuMsPerTask: cpuMs / TASKS }),
  };
}

/**
 * CPU milliseconds spent so far by this process and everything under it (worker processes, their
 * interpreters, reaped ones included) and by PostgreSQL's server processes (every client's, so
 * another user of the same server shows here too). On a machine shared with other work the wall
 * time swings by more than the queue costs; the CPU a task takes swings much less, and on two
 * cores every millisecond of it, the bench's own included, is a millisecond some run waits.
 */
function cpuMsSoFar(): number {
  const procs = new Map<number, { parent: number; ticks: number; postgres: boolean }>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue; // ended meanwhile: its time is in its parent's children's time
    }
    const end = stat.lastIndexOf(")");
    // After the name: state, ppid, ..., utime (14th field), stime, cutime, cstime.
    const fields = stat.slice(end + 2).split(" ");
    const ticks = [11, 12, 13, 14].reduce((sum, index) => sum + Number(fields[index]), 0);
    procs.set(Number(name), { parent: Number(fields[1]), ticks, postgres: stat.includes("(postgres)") });
  }
  const counted = (pid: number): boolean => {
    const proc = procs.get(pid);
    if (!proc) return false;
    return pid === process.pid || proc.postgres || counted(proc.parent);
  };
  let ticks = 0;
  for (const [pid, proc] of procs) if (counted(pid)) ticks += proc.ticks;
  return ticks * 10; // USER_HZ is 100 on Linux
}

interface JobTimes {
  activeMsPerTask: number;
  firstFetchMs: number;
}

/** Mean fetch-to-complete time of the timed jobs, and the first one's wait to be fetched, from pg-boss's timestamps. */
async function jobTimes(round: string): Promise<JobTimes> {
  const client = new pg.Client({ connectionString: DB_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ active_ms: number; first_fetch_ms: number; jobs: string }>(
      `SELECT avg(extract(epoch FROM completed_on - started_on) * 1000)::float AS active_ms,
         (extract(epoch FROM min(started_on) - min(created_on)) * 1000)::float AS first_fetch_ms, count(*) AS jobs
       FROM ${SCHEMA}.job WHERE state = 'completed' AND data->>'threadId' LIKE $1`,
      [`${PREFIX}queue-${round}-timed-%`],
    );
    if (Number(rows[0]?.jobs) !== TASKS) throw new Error(`found ${rows[0]?.jobs} completed timed jobs, not ${TASKS}`);
    return { activeMsPerTask: rows[0]?.active_ms ?? Number.NaN, firstFetchMs: rows[0]?.first_fetch_ms ?? Number.NaN };
  } finally {
    await client.end();
  }
}

/** When the last timed job of the round completed, by PostgreSQL's clock, in epoch milliseconds. */
async function lastCompletionEpochMs(round: string): Promise<number> {
  const client = new pg.Client({ connectionString: DB_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ last: number }>(
      `SELECT (extract(epoch FROM max(completed_on)) * 1000)::float AS last FROM ${SCHEMA}.job
       WHERE state = 'completed' AND data->>'threadId' LIKE $1`,
      [`${PREFIX}queue-${round}-timed-%`],
    );
    return rows[0]?.last ?? Number.NaN;
  } finally {
    await client.end();
  }
}

async function direct(store: RunStore, concurrency: number, round: string): Promise<Row> {
  const sandbox = createSandbox({ kind: SANDBOX });
  const agent = createAgent({ model: createDemoModel(), sandbox, checkpointer: store.checkpointer });
  const runAll = (label: string, count: number) => {
    let next = 0;
    return Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < count) {
          const index = next++;
          const thread_id = `${PREFIX}direct-${round}-${label}-${index}`;
          const state = await agent.invoke(
            { task: DEMO_TASK },
            { context: settings, configurable: { thread_id }, durability: "sync" },
          );
          if (state.status !== "passed") throw new Error(`direct run ${index} ended ${state.status}`);
        }
      }),
    );
  };
  // Untimed, as each worker gets below: the interpreters warm up, and V8 compiles the hot code.
  await runAll("warm", WARM_TASKS * concurrency);
  const started = performance.now();
  const cpuBefore = cpuMsSoFar();
  await runAll("timed", TASKS);
  const wallMs = performance.now() - started;
  const cpuMs = cpuMsSoFar() - cpuBefore;
  await sandbox.close();
  return row("direct, one process", concurrency, wallMs, undefined, cpuMs);
}

function startWorker(bin: string): Promise<{ stop: () => Promise<void> }> {
  // --json puts the per-step events on stdout, which goes nowhere: on stderr, read by this process,
  // each of a job's ~10 lines woke it up, CPU the direct runs it is compared with do not spend.
  const args = [bin, "worker", "--poll-interval", "0.5", "--heartbeat", "5", "--json"];
  const child = spawn(process.execPath, args, {
    env: {
      ...process.env,
      SELFHEAL_POSTGRES_URL: DB_URL,
      SELFHEAL_QUEUE_SCHEMA: SCHEMA,
      OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const exited = new Promise<void>((resolve) => child.on("close", () => resolve()));
  return new Promise((resolve, reject) => {
    let stderr = "";
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
      if (stderr.includes("taking jobs"))
        resolve({
          stop: () => {
            child.kill("SIGTERM");
            return exited;
          },
        });
    });
    child.on("close", (code) => reject(new Error(`worker exited ${code}: ${stderr}`)));
  });
}

async function queued(
  store: RunStore,
  queue: TaskQueue,
  workers: number,
  round: string,
  bin = BIN,
  way = "queue, worker processes",
): Promise<Row> {
  // Started and ready before the clock starts: a worker is a long-lived process, its start-up is not per task.
  const started = await Promise.all(Array.from({ length: workers }, () => startWorker(bin)));
  const runAll = async (label: string, count: number) => {
    const jobs = Array.from({ length: count }, (_, index) => ({
      threadId: `${PREFIX}queue-${round}-${label}-${index}`,
      input: { task: DEMO_TASK },
    }));
    const createdAt = new Date().toISOString();
    for (const job of jobs) await store.saveRun({ threadId: job.threadId, task: DEMO_TASK, settings, createdAt });
    await queue.submit(jobs, DEFAULT_DELIVERY);
    // The row's time ends at the last completion's own stamp (below), not at this poll: polling
    // more often only spent CPU beside the worker (4-30 ms a task at 50 ms, this process and PostgreSQL's).
    while ((await queue.pendingCount()) > 0) await new Promise((resolve) => setTimeout(resolve, 500));
  };
  try {
    // Untimed: as many jobs per worker as the direct runs warm up with (their spread over the
    // workers is pg-boss's), to warm the interpreters and V8's compiled code alike.
    await runAll("warm", WARM_TASKS * workers);
    const clock = Date.now();
    const cpuBefore = cpuMsSoFar();
    await runAll("timed", TASKS);
    const cpuMs = cpuMsSoFar() - cpuBefore;
    // Up to the last completion as PostgreSQL stamped it (same host, same clock): the poll above
    // would add up to its interval of waiting to the row's wall time.
    const wallMs = (await lastCompletionEpochMs(round)) - clock;
    return row(way, workers, wallMs, await jobTimes(round), cpuMs);
  } finally {
    await Promise.all(started.map((worker) => worker.stop()));
  }
}

/** The demo's two programs run back to back per task, with no agent and no queue: what the sandbox alone allows. */
async function sandboxOnly(concurrency: number): Promise<Row> {
  const sandbox = createSandbox({ kind: SANDBOX });
  const programs = [DEMO_FIRST_PROGRAM, DEMO_FIXED_PROGRAM].map((reply) => extractCode(reply, "python").code ?? "");
  const runTask = async () => {
    for (const code of programs) await sandbox.run({ language: "python", code });
  };
  await runTask();
  let next = 0;
  const started = performance.now();
  const cpuBefore = cpuMsSoFar();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < TASKS) await runTask();
    }),
  );
  const wallMs = performance.now() - started;
  const cpuMs = cpuMsSoFar() - cpuBefore;
  await sandbox.close();
  return row("sandbox only, no agent", concurrency, wallMs, undefined, cpuMs);
}

const median = (list: number[]) => [...list].sort((a, b) => a - b)[list.length >> 1] ?? Number.NaN;

/**
 * The queue's own cost with no run in it, in this process: empty jobs through one slot (pg-boss's
 * fetch and completion, the announcement, the heartbeat's two beats), and the heartbeat alone.
 */
async function queueParts(queue: TaskQueue): Promise<{ emptyJobMs: number; heartbeatMs: number }> {
  const count = 100;
  const jobs = Array.from({ length: count }, (_, index) => ({
    threadId: `${PREFIX}empty-${index}`,
    input: { task: DEMO_TASK },
  }));
  let done = 0;
  let allDone: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => {
    allDone = resolve;
  });
  const taking = await queue.work({ concurrency: 1, pollingIntervalSeconds: 0.5, heartbeatSeconds: 5 }, async () => {
    if (++done === count) allDone();
    return {};
  });
  const clock = performance.now();
  await queue.submit(jobs, DEFAULT_DELIVERY);
  await finished;
  const emptyJobMs = (performance.now() - clock) / count;
  await taking.stop();

  const pool = new pg.Pool({ connectionString: DB_URL, max: 2 });
  const beats: number[] = [];
  for (let index = 0; index < count; index++) {
    const started = performance.now();
    const heartbeat = startHeartbeat(pool, checkSchemaName(SCHEMA), {
      jobId: randomUUID(),
      threadId: `${PREFIX}beat`,
      worker: "bench",
      everySeconds: 60,
      queue: RUN_QUEUE,
    });
    await heartbeat.stop();
    beats.push(performance.now() - started);
  }
  await pool.end();
  return { emptyJobMs, heartbeatMs: median(beats) };
}

async function cleanUp(): Promise<void> {
  const client = new pg.Client({ connectionString: DB_URL });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  for (const table of ["selfheal_runs", "checkpoints", "checkpoint_blobs", "checkpoint_writes"])
    await client.query(`DELETE FROM ${table} WHERE thread_id LIKE $1`, [`${PREFIX}%`]);
  await client.end();
}

const store = await openRunStore({ kind: "postgres", url: DB_URL });
const queue = await TaskQueue.open({ url: DB_URL, schema: SCHEMA }, { supervise: false });
const rows: Row[][] = [];
let parts: Awaited<ReturnType<typeof queueParts>>;
try {
  parts = await queueParts(queue);
  for (let repeat = 0; repeat < ROUNDS; repeat++) {
    for (const [index, workers] of WORKER_COUNTS.entries()) {
      const round = `${repeat}-${index}`;
      // Direct runs before and after the queued ones, averaged: the load from others drifts within a round.
      const before = await direct(store, workers, `${round}a`);
      const queuedRows = [await queued(store, queue, workers, round)];
      if (BASELINE_BIN)
        queuedRows.push(await queued(store, queue, workers, `${round}b`, BASELINE_BIN, "queue, baseline workers"));
      const after = await direct(store, workers, `${round}z`);
      const sandboxRow = await sandboxOnly(workers);
      const directCpuMs = ((before.cpuMsPerTask ?? 0) + (after.cpuMsPerTask ?? 0)) * (TASKS / 2);
      const directRow = row("direct, one process", workers, (before.wallMs + after.wallMs) / 2, undefined, directCpuMs);
      rows.push([directRow, ...queuedRows, sandboxRow]);
    }
  }
} finally {
  await queue.close();
  await store.close();
  await cleanUp();
}

const fmt = (value: number, digits = 0) => value.toFixed(digits);
console.log(
  `${TASKS} two-attempt tasks each, ${SANDBOX} sandbox, ${cpus().length} CPUs, load ${loadavg()[0]?.toFixed(2)}, ` +
    `median of ${ROUNDS} interleaved round(s)\n`,
);
console.log(
  "workers  way                        wall ms  tasks/s  slot ms/task  queue overhead ms/task  = in job + between jobs  first fetch ms  cpu ms/task",
);
for (const workers of WORKER_COUNTS) {
  const rounds = rows.filter((group) => group[0]?.workers === workers);
  for (const way of rounds[0]?.map((r) => r.way) ?? []) {
    // Each round's queue row against that round's direct runs, then the median over rounds.
    const pairs = rounds.map((group) => ({ r: group.find((r) => r.way === way)!, d: group[0]! }));
    const pick = (value: (r: Row, d: Row) => number) => median(pairs.map(({ r, d }) => value(r, d)));
    const wallMs = pick((r) => r.wallMs);
    const queuedRow = pairs[0]?.r.activeMsPerTask !== undefined;
    // In job: fetch to complete beyond a direct run (lookups, lease, heartbeat rows, completion).
    // Between jobs: a slot holding no job (fetching, the wait for the first fetch, submit lag).
    const overhead = queuedRow ? fmt(pick((r, d) => r.slotMsPerTask - d.slotMsPerTask)) : "";
    const split = queuedRow
      ? `${fmt(pick((r, d) => (r.activeMsPerTask ?? 0) - d.slotMsPerTask)).padStart(8)} + ${fmt(pick((r) => r.slotMsPerTask - (r.activeMsPerTask ?? 0))).padStart(12)}`
      : "";
    const firstFetch = queuedRow ? fmt(pick((r) => r.firstFetchMs ?? 0)) : "";
    const cpu = fmt(pick((r) => r.cpuMsPerTask ?? Number.NaN));
    console.log(
      `${String(workers).padStart(7)}  ${way.padEnd(25)}  ${fmt(wallMs).padStart(7)}  ${fmt(TASKS / (wallMs / 1000), 2).padStart(7)}  ${fmt((wallMs * workers) / TASKS).padStart(12)}  ${overhead.padStart(22)}  ${split.padEnd(23)}  ${firstFetch.padStart(14)}  ${cpu.padStart(11)}`,
    );
  }
}
console.log(`
The queue's own parts, with no run (this process, this checkout): an empty job through one slot
costs ${fmt(parts.emptyJobMs, 1)} ms (pg-boss's fetch and completion, the heartbeat's two beats); the heartbeat
alone ${fmt(parts.heartbeatMs, 1)} ms a job (one beat as the job starts, beside the run; one as it ends, beside
pg-boss's completion), and one more every 5 s of a longer run. pg-boss's polling shows only in the
first fetch: an idle worker waits up to its interval (0.5 s here) for a job unless it is announced.

On more machines: each worker adds its slots, and the queue itself costs a few queries per task
(send, fetch with SKIP LOCKED, a heartbeat every few seconds, complete), far below what the runs
write as checkpoints. Throughput grows with machines until the shared PostgreSQL (checkpoint
writes, connections: a worker opens up to 12, so put PgBouncer in front of hundreds) or the model
provider (--model-calls-per-minute) is the limit. On this machine the CPUs are shared, so more
workers than CPUs add waiting, not throughput: "sandbox only" is the ceiling the programs allow.`);
