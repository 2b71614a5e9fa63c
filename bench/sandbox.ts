/**
 * Sandbox latency and throughput, side by side: a bare interpreter spawn, the process backend,
 * bwrap cold and pre-warmed, gVisor where runsc is installed, and containers cold and pre-warmed
 * where a container engine answers (image: $SELFHEAL_CONTAINER_IMAGE, else the official images),
 * each running `print(1)`. Prints a table; asserts nothing.
 *
 *   npm run bench:sandbox [-- --runs 100 --throughput-runs 40]
 */
import { spawn } from "node:child_process";
import { cpus, loadavg } from "node:os";
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
  },
});
const RUNS = Number(values.runs);
const THROUGHPUT_RUNS = Number(values["throughput-runs"]);
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
    name: `bare spawn (${executable} -I -c "print(1)")`,
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

function sandboxContender(name: string, sandbox: ManagedSandbox, warm: boolean): Contender {
  return {
    name,
    runOnce: async () => {
      const result = await sandbox.run(REQUEST);
      if (result.status !== "ok") throw new Error(`${name}: ${result.status} ${result.stderr}`);
    },
    ...(warm ? { between: () => sandbox.prewarm(["python"]) } : {}),
    close: () => sandbox.close(),
  };
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
  const python = (await resolveInterpreters()).python;
  if (!python) throw new Error("python3 not found");

  const contenders: Contender[] = [
    bareSpawn(python.executable),
    sandboxContender("process backend, cold", createSandbox({ kind: "process", prewarm: false }), false),
    sandboxContender("process backend, pre-warmed", createSandbox({ kind: "process" }), true),
  ];
  const bwrap = probeBwrap();
  if (bwrap.usable) {
    contenders.push(
      sandboxContender("bwrap, cold", createSandbox({ kind: "bwrap", prewarm: false }), false),
      sandboxContender("bwrap, pre-warmed", createSandbox({ kind: "bwrap" }), true),
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
  console.log(`load average at the end ${load()}`);

  const nameWidth = Math.max(...rows.map((row) => row.name.length));
  console.log(`\n${"".padEnd(nameWidth)}  p50 ms  p90 ms  runs/s x1  runs/s x4`);
  for (const row of rows) {
    console.log(
      `${row.name.padEnd(nameWidth)}  ${row.p50.toFixed(1).padStart(6)}  ${row.p90.toFixed(1).padStart(6)}  ${row.serial.toFixed(1).padStart(9)}  ${row.concurrent4.toFixed(1).padStart(9)}`,
    );
  }
  const bare = rows[0];
  const cold = rows.find((row) => row.name === "bwrap, cold");
  const warm = rows.find((row) => row.name === "bwrap, pre-warmed");
  if (bare && cold)
    console.log(`\nbwrap cold p50 / bare spawn p50 = ${(cold.p50 / bare.p50).toFixed(2)} (target <= 1.3)`);
  if (warm)
    console.log(
      `bwrap pre-warmed p50 = ${warm.p50.toFixed(1)} ms (target < 5)${bare ? `, ${(warm.p50 / bare.p50).toFixed(3)} x bare spawn` : ""}`,
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
