/**
 * Sandbox latency and throughput, side by side: a bare spawn of the very interpreter the sandbox
 * runs, the process backend, bwrap cold (its sandbox made ahead, the interpreter started by the
 * run), cold with nothing made ahead, pre-warmed and back to back (each run starting the moment
 * the one before returned: what an agent with an instant model sees), gVisor where runsc is
 * installed, and containers cold and pre-warmed where a container engine answers (image:
 * $SELFHEAL_CONTAINER_IMAGE, else the official images), each running `print(1)`. Prints a table
 * and the goals beside their figures; asserts nothing.
 *
 *   npm run bench:sandbox [-- --runs 100 --throughput-runs 40 --pool 1]
 */
import { spawn } from "node:child_process";
import { cpus, loadavg } from "node:os";
import { basename } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";

import { CONTAINER_IMAGE_ENV } from "../src/sandbox/container/command.js";
import { resolveInterpreters } from "../src/sandbox/host/interpreters.js";
import {
  checkSandbox,
  createSandbox,
  DEFAULT_CONTAINER_IMAGES,
  type ManagedSandbox,
  probeBwrap,
  probeGvisor,
} from "../src/sandbox/index.js";
import type { RunRequest } from "../src/sandbox/types.js";
import { type Contender, latencies, percentile } from "./timing.js";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "100" },
    "throughput-runs": { type: "string", default: "40" },
    /** Interpreters the bwrap and process sandboxes keep warm per language. */
    pool: { type: "string", default: "1" },
  },
});
const RUNS = Number(values.runs);
const THROUGHPUT_RUNS = Number(values["throughput-runs"]);
const POOL_SIZE = Number(values.pool);
const REQUEST: RunRequest = { language: "python", code: "print(1)\n" };

interface Row {
  name: string;
  p50: number;
  p90: number;
  serial: number;
  concurrent4: number;
}

/** Runs per second with `concurrency` runs in flight at all times. */
async function throughput(contender: Contender, concurrency: number): Promise<number> {
  let started = 0;
  const begin = performance.now();
  const worker = async (): Promise<void> => {
    while (started < THROUGHPUT_RUNS) {
      started += 1;
      await contender.runOnce();
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return THROUGHPUT_RUNS / ((performance.now() - begin) / 1000);
}

function bareSpawn(executable: string): Contender {
  return {
    name: `bare spawn (${basename(executable)} -I -c "print(1)")`,
    runOnce: () =>
      new Promise<void>((resolve, reject) => {
        const child = spawn(executable, ["-I", "-c", "print(1)"], { stdio: ["ignore", "pipe", "pipe"] });
        child.stdout.resume();
        child.stderr.resume();
        child.once("error", reject);
        child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`exit ${code}`))));
      }),
  };
}

function sandboxContender(
  name: string,
  sandbox: ManagedSandbox,
  warm: boolean,
  request: RunRequest = REQUEST,
): Contender {
  return {
    name,
    runOnce: async () => {
      const result = await sandbox.run(request);
      if (result.status !== "ok") throw new Error(`${name}: ${result.status} ${result.stderr}`);
    },
    ...(warm ? { between: () => sandbox.prewarm(["python"]) } : {}),
    close: () => sandbox.close(),
  };
}

/**
 * Latencies of `runs` runs one after another with no wait between them: each starts the moment the
 * one before returned, so a pool that refills too slowly shows here and not in the pre-warmed row.
 */
async function backToBack(sandbox: ManagedSandbox, runs: number): Promise<number[]> {
  await sandbox.prewarm(["python"]);
  const durations: number[] = [];
  for (let run = 0; run < runs; run++) {
    const started = performance.now();
    const result = await sandbox.run(REQUEST);
    durations.push(performance.now() - started);
    if (result.status !== "ok") throw new Error(`back to back: ${result.status} ${result.stderr}`);
  }
  return durations.sort((a, b) => a - b);
}

/** Which of the isolation layers the goals name hold for the whole run in this bwrap sandbox. */
function bwrapLayers(sandbox: ManagedSandbox): { all: boolean; text: string } {
  const isolation = sandbox.describe();
  const layers = {
    cgroups: isolation.memory.scope === "run",
    seccomp: isolation.syscalls.scope === "run",
    tmpfs: isolation.disk.scope === "run",
  };
  const text = Object.entries(layers)
    .map(([name, on]) => `${name} ${on ? "on" : "off"}`)
    .join(", ");
  return { all: Object.values(layers).every(Boolean), text };
}

/**
 * Why the container rows cannot run, or null: the image must be on this machine already. A pull
 * inside a timed loop would measure the registry, and with none reachable it fails the whole run.
 */
function missingImage(image: string): Promise<string | null> {
  return new Promise((resolve) => {
    const inspect = spawn("docker", ["image", "inspect", image], { stdio: "ignore" });
    inspect.once("error", (error) => resolve(`cannot ask docker about ${image}: ${error.message}`));
    inspect.once("exit", (code) =>
      resolve(
        code === 0
          ? null
          : `the image ${image} is not on this machine; pull it, or build one with scripts/build-container-image.sh and name it in ${CONTAINER_IMAGE_ENV}`,
      ),
    );
  });
}

async function main(): Promise<void> {
  // The Python the sandboxes resolve (python3 on PATH or $SELFHEAL_PYTHON, a pyenv shim followed to
  // its binary): the bare row spawns that very binary, so the ratios compare like with like.
  const python = (await resolveInterpreters()).python;
  if (!python) throw new Error("python3 not found");
  console.log(`python: ${python.executable}, for the bare spawn and every local sandbox alike`);

  const contenders: Contender[] = [
    bareSpawn(python.executable),
    sandboxContender("process backend, cold", createSandbox({ kind: "process", prewarm: false }), false),
    sandboxContender("process backend, pre-warmed", createSandbox({ kind: "process", poolSize: POOL_SIZE }), true),
  ];
  const bwrap = probeBwrap();
  let layers: { all: boolean; text: string } | null = null;
  if (bwrap.usable) {
    const warmBwrap = createSandbox({ kind: "bwrap", poolSize: POOL_SIZE });
    await warmBwrap.prepare();
    layers = bwrapLayers(warmBwrap);
    console.log(`bwrap isolation layers here: ${layers.text}`);
    contenders.push(
      sandboxContender("bwrap, cold", createSandbox({ kind: "bwrap", prewarm: false }), false),
      // A run asking limits of its own gets nothing made ahead: its cgroup, tmpfs and sandbox are
      // made on its path. This is what a cold run cost before sandboxes were made ahead of need.
      sandboxContender("bwrap, cold, nothing made ahead", createSandbox({ kind: "bwrap", prewarm: false }), false, {
        ...REQUEST,
        limits: { maxFileMb: 63 },
      }),
      sandboxContender("bwrap, pre-warmed", warmBwrap, true),
    );
  } else {
    console.log(`bwrap skipped: ${bwrap.reason}`);
  }
  // A gVisor sandbox starts per run, so there is only a cold figure.
  const gvisorMissing = probeGvisor();
  if (gvisorMissing === null) {
    contenders.push(sandboxContender("gvisor (runsc, ptrace), cold", createSandbox({ kind: "gvisor" }), false));
  } else {
    console.log(`gvisor skipped: ${gvisorMissing}`);
  }

  // A container starts per run unless one waits pre-warmed, which prewarm() resolves once it is up.
  try {
    await checkSandbox({ kind: "container" });
    const missing = await missingImage(process.env[CONTAINER_IMAGE_ENV] || DEFAULT_CONTAINER_IMAGES.python);
    if (missing) throw new Error(missing);
    contenders.push(
      sandboxContender("container (docker), cold", createSandbox({ kind: "container", prewarm: false }), false),
      sandboxContender("container (docker), pre-warmed", createSandbox({ kind: "container" }), true),
    );
  } catch (error) {
    console.log(`container skipped: ${(error as Error).message}`);
  }

  const load = (): string =>
    loadavg()
      .map((value) => value.toFixed(2))
      .join(" ");
  console.log(
    `${cpus().length} CPUs, load average ${load()}; ${RUNS} runs per contender for latency, ${THROUGHPUT_RUNS} per throughput figure`,
  );
  // Warm the file cache and the interpreter lookup before timing anything.
  for (const contender of contenders) for (let run = 0; run < 3; run++) await contender.runOnce();
  const durations = await latencies(contenders, RUNS);
  const rows: Row[] = [];
  for (const [index, contender] of contenders.entries()) {
    const sorted = durations[index] ?? [];
    const serial = await throughput(contender, 1);
    const concurrent4 = await throughput(contender, 4);
    rows.push({
      name: contender.name,
      p50: percentile(sorted, 0.5),
      p90: percentile(sorted, 0.9),
      serial,
      concurrent4,
    });
    await contender.close?.();
  }
  const backToBackRows: { name: string; p50: number; p90: number }[] = [];
  const localBackToBack = [
    { name: "process backend, back to back", kind: "process" as const },
    ...(bwrap.usable ? [{ name: "bwrap, back to back", kind: "bwrap" as const }] : []),
  ];
  for (const { name, kind } of localBackToBack) {
    const sandbox = createSandbox({ kind, poolSize: POOL_SIZE });
    const sorted = await backToBack(sandbox, RUNS);
    await sandbox.close();
    backToBackRows.push({ name, p50: percentile(sorted, 0.5), p90: percentile(sorted, 0.9) });
  }
  console.log(`load average at the end ${load()}`);

  const nameWidth = Math.max(...[...rows, ...backToBackRows].map((row) => row.name.length));
  console.log(`\n${"".padEnd(nameWidth)}  p50 ms  p90 ms  runs/s x1  runs/s x4`);
  for (const row of rows) {
    console.log(
      `${row.name.padEnd(nameWidth)}  ${row.p50.toFixed(2).padStart(6)}  ${row.p90.toFixed(2).padStart(6)}  ${row.serial.toFixed(1).padStart(9)}  ${row.concurrent4.toFixed(1).padStart(9)}`,
    );
  }
  for (const row of backToBackRows) {
    console.log(`${row.name.padEnd(nameWidth)}  ${row.p50.toFixed(2).padStart(6)}  ${row.p90.toFixed(2).padStart(6)}`);
  }
  console.log(`(pool of ${POOL_SIZE} warm interpreter${POOL_SIZE === 1 ? "" : "s"} per language)`);
  const bare = rows[0];
  const cold = rows.find((row) => row.name === "bwrap, cold");
  const warm = rows.find((row) => row.name === "bwrap, pre-warmed");
  const chained = backToBackRows.find((row) => row.name === "bwrap, back to back");
  const verdict = (met: boolean): string => (met ? "met" : "NOT met");
  console.log("");
  if (warm && layers) {
    const met = layers.all && warm.p50 < 2;
    console.log(
      `goal: bwrap pre-warmed p50 < 2 ms with cgroups + seccomp + tmpfs on: ${warm.p50.toFixed(2)} ms, ${layers.text}: ${verdict(met)}`,
    );
  }
  if (warm && chained)
    console.log(
      `goal: bwrap back-to-back p50 <= 2 x pre-warmed p50: ${chained.p50.toFixed(2)} / ${warm.p50.toFixed(2)} = ${(chained.p50 / warm.p50).toFixed(2)}: ${verdict(chained.p50 <= 2 * warm.p50)}`,
    );
  if (bare && cold)
    console.log(
      `goal: bwrap cold p50 <= 1.1 x bare spawn p50 (same binary): ${cold.p50.toFixed(2)} / ${bare.p50.toFixed(2)} = ${(cold.p50 / bare.p50).toFixed(2)}: ${verdict(cold.p50 <= 1.1 * bare.p50)}`,
    );
  // The unit suite held `print(1)` once warm under 100 ms on both local backends; a speed target
  // belongs here, where a loaded machine shows up as a figure instead of a failed test.
  for (const row of rows.filter((entry) => entry.name.endsWith("pre-warmed") && !entry.name.startsWith("container"))) {
    console.log(`${row.name} p50 = ${row.p50.toFixed(1)} ms (target < 100: print(1) answered quickly once warm)`);
  }
  const containerCold = rows.find((row) => row.name === "container (docker), cold");
  const containerWarm = rows.find((row) => row.name === "container (docker), pre-warmed");
  for (const row of [containerCold, containerWarm]) {
    if (!row) continue;
    const ratios = [
      bare ? `${(row.p50 / bare.p50).toFixed(2)} x bare spawn` : "",
      cold ? `${(row.p50 / cold.p50).toFixed(2)} x bwrap cold` : "",
    ];
    console.log(`${row.name} p50 = ${row.p50.toFixed(1)} ms, ${ratios.filter(Boolean).join(", ")}`);
  }
  if (bwrap.usable) {
    const isolation = createSandbox({ kind: "bwrap", prewarm: false }).describe();
    const held = (["memory", "processes", "cpu", "disk", "syscalls"] as const).map(
      (name) => `${name} ${isolation[name].scope}`,
    );
    console.log(`bwrap limits here: ${held.join(", ")}`);
  }
}

await main();
