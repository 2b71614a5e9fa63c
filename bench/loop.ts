/**
 * What the agent's loop costs beyond the programs it runs: a run of 12 attempts with an instant
 * scripted model (each attempt fails differently, the 12th passes), timed whole, minus the time
 * spent inside the sandbox's `run()`. Side by side with no checkpointer, MemorySaver and SQLite,
 * round-robin so the machine's load hits all three alike. Then the resident size of one process
 * after 10 and after 100 two-attempt runs on SQLite (a worker's life), after a forced GC.
 *
 *   npm run bench:loop [-- --runs 10 --kind process --memory-runs 100]
 *
 * Goals (issue 29): under 20 ms of orchestration per attempt; resident size after 100 runs within
 * 1.2x of after 10. With `--kind bwrap`, also the sandbox's share of an attempt with and without
 * the fork server, side by side (issue 41: with <= 0.3x without). Prints figures; asserts nothing.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { type BaseCheckpointSaver, MemorySaver } from "@langchain/langgraph";
import { parseSettings } from "../src/core/settings.js";
import { createAgent } from "../src/graph/build.js";
import { createSandbox, type ManagedSandbox, type Sandbox, type SandboxKind } from "../src/sandbox/index.js";
import { openRunStore } from "../src/store/index.js";
import { ScriptedChatModel } from "../src/tools/scripted-model.js";
import { percentile } from "./timing.js";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "10" },
    kind: { type: "string", default: "process" },
    "memory-runs": { type: "string", default: "100" },
  },
});
const RUNS = Number(values.runs);
const MEMORY_RUNS = Number(values["memory-runs"]);
const ATTEMPTS = 12;

/** Eleven different exceptions, so no error repeats and the run is never stuck, then a pass. */
const FAILURES = [
  "ValueError",
  "TypeError",
  "KeyError",
  "IndexError",
  "ZeroDivisionError",
  "NameError",
  "AttributeError",
  "RuntimeError",
  "LookupError",
  "OSError",
  "ArithmeticError",
];
const replies = (attempts: number) => [
  ...FAILURES.slice(0, attempts - 1).map((error, n) => fence(`def add(a, b):\n    raise ${error}("attempt ${n + 1}")`)),
  fence("def add(a, b):\n    return a + b"),
];
const TESTS = "assert add(2, 3) == 5";

function fence(code: string): string {
  return `\`\`\`python\n${code}\n\`\`\``;
}

/** The sandbox, with the wall time spent inside its `run()` summed. */
function timedSandbox(inner: ManagedSandbox): { sandbox: Sandbox; spentMs: () => number } {
  let spent = 0;
  const sandbox: Sandbox = Object.create(inner);
  sandbox.run = async (request, hooks) => {
    const started = performance.now();
    try {
      return await inner.run(request, hooks);
    } finally {
      spent += performance.now() - started;
    }
  };
  return { sandbox, spentMs: () => spent };
}

interface Setup {
  name: string;
  checkpointer: () => Promise<{ saver?: BaseCheckpointSaver; close: () => Promise<void> }>;
}

const scratch = mkdtempSync(join(tmpdir(), "selfheal-bench-loop-"));
const SETUPS: Setup[] = [
  { name: "no checkpointer", checkpointer: async () => ({ close: async () => undefined }) },
  { name: "MemorySaver", checkpointer: async () => ({ saver: new MemorySaver(), close: async () => undefined }) },
  {
    name: "SQLite",
    checkpointer: async () => {
      const store = await openRunStore({ kind: "sqlite", path: join(scratch, "loop.db") });
      return { saver: store.checkpointer, close: () => store.close() };
    },
  },
];

const inner = createSandbox({ kind: values.kind as SandboxKind, prewarm: ["python"] });
const timed = { inner, ...timedSandbox(inner) };
let threads = 0;

/** One run of `attempts` attempts; returns its wall time and the sandbox's share of it. */
async function oneRun(saver: BaseCheckpointSaver | undefined, attempts: number, on = timed) {
  const { sandbox, spentMs } = on;
  const agent = createAgent({ model: new ScriptedChatModel(replies(attempts)), sandbox, checkpointer: saver });
  await on.inner.prewarm(["python"]);
  const sandboxBefore = spentMs();
  const started = performance.now();
  const state = await agent.invoke(
    { task: "Write add(a, b).", language: "python", tests: TESTS },
    {
      context: parseSettings({
        maxAttempts: attempts,
        tokenBudget: 10_000_000,
        model: "scripted",
        sandbox: values.kind,
      }),
      configurable: { thread_id: `loop-${process.pid}-${threads++}` },
    },
  );
  const wallMs = performance.now() - started;
  if (state.status !== "passed" || state.attempt !== attempts) {
    throw new Error(`expected a pass at attempt ${attempts}, got ${state.status} after ${state.attempt}`);
  }
  return { wallMs, sandboxMs: spentMs() - sandboxBefore };
}

/**
 * Issue 41 on bwrap: the sandbox's share of an attempt with pre-warmed runs forked from the fork
 * server, against the same sandbox without one (each run's interpreter then started cold, the pool
 * refilled while the run ran), round-robin, no checkpointer.
 */
async function compareForkServer(): Promise<void> {
  const variants = [true, false].map((forkServer) => {
    const sandbox = createSandbox({ kind: "bwrap", prewarm: ["python"], forkServer });
    return { name: forkServer ? "fork server" : "no fork server", on: { inner: sandbox, ...timedSandbox(sandbox) } };
  });
  try {
    for (const { on } of variants) await oneRun(undefined, ATTEMPTS, on);
    const shares = variants.map((): { loop: number[]; sandbox: number[] } => ({ loop: [], sandbox: [] }));
    for (let run = 0; run < RUNS; run++) {
      for (const [index, { on }] of variants.entries()) {
        const { wallMs, sandboxMs } = await oneRun(undefined, ATTEMPTS, on);
        shares[index]?.loop.push((wallMs - sandboxMs) / ATTEMPTS);
        shares[index]?.sandbox.push(sandboxMs / ATTEMPTS);
      }
    }
    console.log("\nbwrap, no checkpointer   loop ms/attempt p50  sandbox ms/attempt p50");
    const p50s = shares.map(({ loop, sandbox }) => ({
      loop: percentile(
        loop.sort((a, b) => a - b),
        0.5,
      ),
      sandbox: percentile(
        sandbox.sort((a, b) => a - b),
        0.5,
      ),
    }));
    for (const [index, { name }] of variants.entries()) {
      console.log(
        `${name.padEnd(24)} ${p50s[index]!.loop.toFixed(1).padStart(20)} ${p50s[index]!.sandbox.toFixed(1).padStart(23)}`,
      );
    }
    const [forked, cold] = p50s;
    if (forked && cold) {
      const ratio = forked.sandbox / cold.sandbox;
      console.log(
        `goal (issue 41): sandbox ms/attempt with the fork server <= 0.3 x without: ${forked.sandbox.toFixed(1)} / ${cold.sandbox.toFixed(1)} = ${ratio.toFixed(2)}: ${ratio <= 0.3 ? "met" : "NOT met"}; loop < 20 ms: ${forked.loop.toFixed(1)}: ${forked.loop < 20 ? "met" : "NOT met"}`,
      );
    }
  } finally {
    await Promise.all(variants.map(({ on }) => on.inner.close()));
  }
}

try {
  const [one, five, fifteen] = loadavg();
  console.log(
    `${values.kind} sandbox, ${RUNS} runs of ${ATTEMPTS} attempts per setup, round-robin; load ${one?.toFixed(2)} ${five?.toFixed(2)} ${fifteen?.toFixed(2)}`,
  );
  const opened = await Promise.all(SETUPS.map((setup) => setup.checkpointer()));
  // One untimed run each: module loading and the first SQLite tables are not the loop's cost.
  for (const { saver } of opened) await oneRun(saver, ATTEMPTS);
  const perAttempt = SETUPS.map((): number[] => []);
  const sandboxShare = SETUPS.map((): number[] => []);
  for (let run = 0; run < RUNS; run++) {
    for (const [index, { saver }] of opened.entries()) {
      const { wallMs, sandboxMs } = await oneRun(saver, ATTEMPTS);
      perAttempt[index]!.push((wallMs - sandboxMs) / ATTEMPTS);
      sandboxShare[index]!.push(sandboxMs / ATTEMPTS);
    }
  }
  console.log("\nsetup             loop ms/attempt p50  p90    sandbox ms/attempt p50  target < 20 ms");
  for (const [index, setup] of SETUPS.entries()) {
    const loop = perAttempt[index]!.sort((a, b) => a - b);
    const inSandbox = sandboxShare[index]!.sort((a, b) => a - b);
    const p50 = percentile(loop, 0.5);
    console.log(
      `${setup.name.padEnd(17)} ${p50.toFixed(1).padStart(20)} ${percentile(loop, 0.9).toFixed(1).padStart(6)} ${percentile(inSandbox, 0.5).toFixed(1).padStart(23)}  ${p50 < 20 ? "met" : "NOT met"}`,
    );
  }

  if (values.kind === "bwrap") await compareForkServer();

  // A worker's life: many short runs in one process, each on a thread of its own, on SQLite.
  const sqlite = opened[2]!.saver;
  const residentMb = () => {
    globalThis.gc?.();
    return process.memoryUsage().rss / 2 ** 20;
  };
  let afterTen = 0;
  for (let run = 1; run <= MEMORY_RUNS; run++) {
    await oneRun(sqlite, 2);
    if (run === 10) afterTen = residentMb();
  }
  const afterAll = residentMb();
  const ratio = afterAll / afterTen;
  console.log(
    `\nresident size (SQLite, 2-attempt runs${globalThis.gc ? ", after a forced GC" : ", no --expose-gc: without a forced GC"}): after 10 runs ${afterTen.toFixed(0)} MiB, after ${MEMORY_RUNS} ${afterAll.toFixed(0)} MiB: ${ratio.toFixed(2)}x (target <= 1.2x: ${ratio <= 1.2 ? "met" : "NOT met"})`,
  );
  await Promise.all(opened.map(({ close }) => close()));
} finally {
  await inner.close();
  rmSync(scratch, { recursive: true, force: true });
}
