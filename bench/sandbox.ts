/**
 * Sandbox latency and throughput, side by side: a bare spawn of the very interpreter the sandbox
 * runs, the process backend, bwrap cold (its sandbox made ahead, the interpreter started by the
 * run), cold with nothing made ahead, pre-warmed and back to back (each run starting the moment
 * the one before returned: what an agent with an instant model sees), back to back with and
 * without the fork server (issue 41), a cold run forked on demand, four runs at once each forked on
 * demand against four cold ones (the
 * time until all four returned), gVisor where runsc is
 * installed, and containers cold and pre-warmed where a container engine answers (image:
 * $SELFHEAL_CONTAINER_IMAGE, else the official images), each running `print(1)`. Prints a table
 * and the goals beside their figures; asserts nothing.
 *
 * Judged rows (issue 36), on each local backend pre-warmed, Python and JavaScript: a small program and three asserts, judged
 * as the agent judges (prepareProgram, the completion mark settled), with the tests in a process of
 * their own (the default) and, beside it, appended to the program in its process (the old way). Then
 * the cost of one call across that boundary: tests that call `add(1, 2)` `--calls` times, timing each
 * call in the test process with perf_counter_ns, in one sandbox run, against the same loop calling the
 * function directly (shared); the median of `--call-runs` runs.
 *
 * Egress rows (issue 40), where bwrap is usable: a Python program that makes one HTTP GET to a server
 * on 127.0.0.1 (`urllib.request.urlopen(...).read()`), run in bwrap with `allowHosts`, so through the
 * run's egress proxy (data.test mapped to the server by $SELFHEAL_EGRESS_RESOLVE, which the bench
 * sets); beside it the same GET from the host (the same Python, `-I -c`, straight to 127.0.0.1, no
 * proxy) and that program without the request, and the bwrap run with the urllib import but neither the request nor allowHosts, and with
 * allowHosts but no request: a run with allowHosts starts cold (no warm interpreter binds its proxy),
 * so the rows compare cold runs, and their gaps are the proxy's setup and the request through it.
 *
 *   npm run bench:sandbox [-- --runs 100 --throughput-runs 40 --pool 1 --calls 2000 --call-runs 5]
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { cpus, loadavg } from "node:os";
import { basename } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";

import type { TestIsolation } from "../src/core/run-result.js";
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
import { EGRESS_RESOLVE_VARIABLE } from "../src/sandbox/run/egress.js";
import type { Language, RunRequest, SandboxKind } from "../src/sandbox/types.js";
import { settleCompletion } from "../src/tools/assemble.js";
import { type PreparedProgram, prepareProgram } from "../src/tools/judge/prepare.js";
import { type Contender, latencies, percentile } from "./timing.js";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "100" },
    "throughput-runs": { type: "string", default: "40" },
    /** Interpreters the bwrap and process sandboxes keep warm per language. */
    pool: { type: "string", default: "1" },
    /** Calls across the judge's boundary timed in one run, and runs of them per backend and isolation. */
    calls: { type: "string", default: "2000" },
    "call-runs": { type: "string", default: "5" },
  },
});
const RUNS = Number(values.runs);
const THROUGHPUT_RUNS = Number(values["throughput-runs"]);
const POOL_SIZE = Number(values.pool);
const REQUEST: RunRequest = { language: "python", code: "print(1)\n" };
const CALLS = Number(values.calls);
const CALL_RUNS = Number(values["call-runs"]);

/** The line the call-cost tests print: the p50 and p90 of one call, in nanoseconds. */
const CALL_MARK = "selfheal-bench-call";
/** The judged rows' program and tests, per language: what a small task's judge run is. */
const JUDGED: Record<Language, { program: string; tests: string; calls: string }> = {
  python: {
    program: "def add(a, b):\n    return a + b\n",
    tests: "assert add(1, 2) == 3\nassert add(-1, 1) == 0\nassert add(2.5, 0.5) == 3.0\n",
    calls: `import time
_durations = []
for _ in range(${CALLS}):
    _started = time.perf_counter_ns()
    add(1, 2)
    _durations.append(time.perf_counter_ns() - _started)
_durations.sort()
print("${CALL_MARK}", _durations[len(_durations) // 2], _durations[min(len(_durations) - 1, len(_durations) * 9 // 10)])
`,
  },
  javascript: {
    program: "function add(a, b) {\n  return a + b;\n}\n",
    tests:
      'const assert = require("node:assert");\nassert.strictEqual(add(1, 2), 3);\nassert.strictEqual(add(-1, 1), 0);\nassert.strictEqual(add(2.5, 0.5), 3);\n',
    calls: `const durations = [];
for (let i = 0; i < ${CALLS}; i++) {
  const started = process.hrtime.bigint();
  add(1, 2);
  durations.push(Number(process.hrtime.bigint() - started));
}
durations.sort((a, b) => a - b);
console.log("${CALL_MARK}", durations[durations.length >> 1], durations[Math.min(durations.length - 1, Math.floor((durations.length * 9) / 10))]);
`,
  },
};
const ISOLATIONS: Record<TestIsolation, string> = {
  process: "tests in own process",
  shared: "tests in program's process",
};

/** What the egress rows' server sends for /x.csv, and the name the sandboxed program asks for. */
const EGRESS_CSV = "city,people\nLyon,522250\nNantes,323204\n";
const EGRESS_HOST = "data.test";
/** The egress rows' program: one GET of `url`, its body printed. */
const egressProgram = (url: string): string =>
  `import urllib.request\nimport sys\nsys.stdout.write(urllib.request.urlopen("${url}").read().decode())\n`;
/** The same program with neither the request nor its output: the cold run the egress rows stand beside. */
const EGRESS_IMPORT_ONLY = "import urllib.request\nimport sys\n";
const EGRESS_ROWS = {
  hostBare: "host, urllib imported, no request",
  host: "host, one GET, no proxy",
  bare: "bwrap, cold, urllib imported, no allowHosts",
  setup: "bwrap, cold, allowHosts, no request",
  get: "bwrap, cold, allowHosts, one GET via the proxy",
};

/** The egress rows' HTTP server on 127.0.0.1: /x.csv answers EGRESS_CSV. */
async function startCsvServer(): Promise<{ server: Server; port: number }> {
  const server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      if (request.url === "/x.csv") {
        response.writeHead(200, { "content-type": "text/csv" });
        response.end(EGRESS_CSV);
      } else {
        response.writeHead(404);
        response.end("no such path\n");
      }
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { server, port: (server.address() as { port: number }).port };
}

/**
 * The program on the host, as `-I -c`: the same Python, with no proxy in its environment; with
 * `port`, the GET, straight to the server, whose body it must print.
 */
function hostEgress(executable: string, port: number | null): Contender {
  const env = { ...process.env };
  for (const name of ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"])
    delete env[name];
  const code = port === null ? EGRESS_IMPORT_ONLY : egressProgram(`http://127.0.0.1:${port}/x.csv`);
  const expected = port === null ? "" : EGRESS_CSV;
  return {
    name: `${port === null ? EGRESS_ROWS.hostBare : EGRESS_ROWS.host} (${basename(executable)} -I -c)`,
    runOnce: () =>
      new Promise<void>((resolve, reject) => {
        const child = spawn(executable, ["-I", "-c", code], { env, stdio: ["ignore", "pipe", "pipe"] });
        let stdout = "";
        let stderr = "";
        child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
        child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
        child.once("error", reject);
        child.once("close", (exitCode) =>
          exitCode === 0 && stdout === expected
            ? resolve()
            : reject(new Error(`host egress row: exit ${exitCode}, stdout ${JSON.stringify(stdout)} ${stderr}`)),
        );
      }),
  };
}

/** A cold bwrap run of the egress rows: with `get`, the program must print the body, fetched through the proxy. */
function egressContender(name: string, request: RunRequest, get: boolean): Contender {
  const sandbox = createSandbox({ kind: "bwrap", prewarm: false });
  return {
    name,
    runOnce: async () => {
      const result = await sandbox.run(request);
      if (result.status !== "ok") throw new Error(`${name}: ${result.status} ${result.stderr}`);
      const through = result.egress?.connections.filter((connection) => connection.allowed) ?? [];
      if (get && (result.stdout !== EGRESS_CSV || through.length !== 1)) {
        throw new Error(
          `${name}: stdout ${JSON.stringify(result.stdout)}, egress ${JSON.stringify(result.egress)} ${result.stderr}`,
        );
      }
    },
    close: () => sandbox.close(),
  };
}

/** The egress rows, in the order the table shows them. */
function egressContenders(executable: string, port: number): Contender[] {
  const allowHosts = [`${EGRESS_HOST}:${port}`];
  return [
    hostEgress(executable, null),
    hostEgress(executable, port),
    egressContender(EGRESS_ROWS.bare, { language: "python", code: EGRESS_IMPORT_ONLY }, false),
    egressContender(EGRESS_ROWS.setup, { language: "python", code: EGRESS_IMPORT_ONLY, allowHosts }, false),
    egressContender(
      EGRESS_ROWS.get,
      { language: "python", code: egressProgram(`http://${EGRESS_HOST}:${port}/x.csv`), allowHosts },
      true,
    ),
  ];
}

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

function judgedRequest(prepared: PreparedProgram, language: Language): RunRequest {
  return {
    language,
    code: prepared.code,
    ...(prepared.files ? { files: prepared.files } : {}),
    ...(prepared.stdin !== undefined ? { stdin: prepared.stdin } : {}),
  };
}

/** One judged run: prepared anew each time (a fresh completion nonce, as every judged run has), and it must pass. */
async function runJudged(
  sandbox: ManagedSandbox,
  language: Language,
  isolation: TestIsolation,
  tests: string,
): Promise<string> {
  const prepared = prepareProgram(JUDGED[language].program, tests, language, { isolation });
  const result = settleCompletion(await sandbox.run(judgedRequest(prepared, language)), prepared.assembled);
  if (result.status !== "ok" || !result.testsCompleted) {
    throw new Error(
      `judged run, ${ISOLATIONS[isolation]}: ${result.status}, tests completed: ${result.testsCompleted} ${result.stderr}`,
    );
  }
  return result.stdout;
}

function judgedContender(
  backend: string,
  sandbox: ManagedSandbox,
  language: Language,
  isolation: TestIsolation,
): Contender {
  return {
    name: `${backend}, pre-warmed, judged ${language}, ${ISOLATIONS[isolation]}`,
    runOnce: async () => {
      await runJudged(sandbox, language, isolation, JUDGED[language].tests);
    },
    between: () => sandbox.prewarm([language]),
    close: () => sandbox.close(),
  };
}

/** One call's cost, p50 and p90 in ms, as the tests measured it in one run on `sandbox`. */
async function callCost(
  sandbox: ManagedSandbox,
  language: Language,
  isolation: TestIsolation,
): Promise<{ p50: number; p90: number }> {
  await sandbox.prewarm([language]);
  const stdout = await runJudged(sandbox, language, isolation, JUDGED[language].calls);
  const match = new RegExp(`^${CALL_MARK} (\\d+) (\\d+)$`, "m").exec(stdout);
  if (!match) throw new Error(`no ${CALL_MARK} line in ${JSON.stringify(stdout)}`);
  return { p50: Number(match[1]) / 1e6, p90: Number(match[2]) / 1e6 };
}

/**
 * Latencies of `runs` runs one after another with no wait between them: each starts the moment the
 * one before returned, so a pool that refills too slowly shows here and not in the pre-warmed row.
 */
async function backToBack(sandbox: ManagedSandbox, runs: number): Promise<number[]> {
  await sandbox.prewarm(["python"]);
  const durations: number[] = [];
  // The first run takes what was made while the bench waited: it is a pre-warmed run, not timed.
  for (let run = 0; run <= runs; run++) {
    const started = performance.now();
    const result = await sandbox.run(REQUEST);
    if (run > 0) durations.push(performance.now() - started);
    if (result.status !== "ok") throw new Error(`back to back: ${result.status} ${result.stderr}`);
  }
  return durations.sort((a, b) => a - b);
}

/** Wall time until four runs started together have all returned. */
async function fourAtOnce(sandbox: ManagedSandbox): Promise<number> {
  // No languages: it waits for the fork server, where there is one, and warms nothing.
  await sandbox.prewarm([]);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      const result = await sandbox.run(REQUEST);
      if (result.status !== "ok") throw new Error(`four at once: ${result.status} ${result.stderr}`);
    }),
  );
  return performance.now() - started;
}

const BWRAP_BACK_TO_BACK = "bwrap, back to back";

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

/** The local backends' judged rows: each isolation on a warm sandbox of its own. */
function judgedContenders(backend: string, kind: SandboxKind): Contender[] {
  return (["python", "javascript"] as const).flatMap((language) =>
    (Object.keys(ISOLATIONS) as TestIsolation[]).map((isolation) =>
      judgedContender(backend, createSandbox({ kind, poolSize: POOL_SIZE }), language, isolation),
    ),
  );
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
    ...judgedContenders("process backend", "process"),
  ];
  const bwrap = probeBwrap();
  let layers: { all: boolean; text: string } | null = null;
  let csvServer: Server | null = null;
  if (bwrap.usable) {
    const warmBwrap = createSandbox({ kind: "bwrap", poolSize: POOL_SIZE });
    await warmBwrap.prepare();
    layers = bwrapLayers(warmBwrap);
    console.log(`bwrap isolation layers here: ${layers.text}`);
    contenders.push(
      // Cold: the run's sandbox made ahead, its interpreter started by the run (no fork server).
      sandboxContender("bwrap, cold", createSandbox({ kind: "bwrap", prewarm: false, forkServer: false }), false),
      // No interpreter waiting: the run's is forked from the fork server on demand (issue 41).
      sandboxContender("bwrap, cold, forked on demand", createSandbox({ kind: "bwrap", prewarm: false }), false),
      // A run asking limits of its own gets nothing made ahead: its cgroup, tmpfs and sandbox are
      // made on its path. This is what a cold run cost before sandboxes were made ahead of need.
      sandboxContender(
        "bwrap, cold, nothing made ahead",
        createSandbox({ kind: "bwrap", prewarm: false, forkServer: false }),
        false,
        {
          ...REQUEST,
          limits: { maxFileMb: 63 },
        },
      ),
      sandboxContender("bwrap, pre-warmed", warmBwrap, true),
      ...judgedContenders("bwrap", "bwrap"),
    );
    // The proxy reaches data.test at the bench's server; a mapping of the caller's own is kept beside it.
    const started = await startCsvServer();
    csvServer = started.server;
    process.env[EGRESS_RESOLVE_VARIABLE] = [process.env[EGRESS_RESOLVE_VARIABLE], `${EGRESS_HOST}=127.0.0.1`]
      .filter(Boolean)
      .join(",");
    contenders.push(...egressContenders(python.executable, started.port));
  } else {
    console.log(`bwrap skipped: ${bwrap.reason}`);
    console.log(`egress rows skipped: they run in bwrap, which is not usable here (${bwrap.reason})`);
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
  if (csvServer) {
    csvServer.closeAllConnections();
    await new Promise((resolve) => csvServer?.close(resolve));
  }
  const backToBackRows: { name: string; p50: number; p90: number }[] = [];
  const localBackToBack = [
    { name: "process backend, back to back", kind: "process" as const, forkServer: true },
    ...(bwrap.usable
      ? [
          { name: BWRAP_BACK_TO_BACK, kind: "bwrap" as const, forkServer: true },
          { name: `${BWRAP_BACK_TO_BACK}, no fork server`, kind: "bwrap" as const, forkServer: false },
        ]
      : []),
  ];
  // Round-robin in rounds of ten, so the machine's load hits each row alike.
  const chains = localBackToBack.map(({ kind, forkServer }) =>
    createSandbox({ kind, poolSize: POOL_SIZE, forkServer }),
  );
  const chainDurations = chains.map((): number[] => []);
  for (let done = 0; done < RUNS; done += 10) {
    for (const [index, sandbox] of chains.entries()) {
      chainDurations[index]?.push(...(await backToBack(sandbox, Math.min(10, RUNS - done))));
    }
  }
  for (const [index, { name }] of localBackToBack.entries()) {
    const sorted = (chainDurations[index] ?? []).sort((a, b) => a - b);
    backToBackRows.push({ name, p50: percentile(sorted, 0.5), p90: percentile(sorted, 0.9) });
    await chains[index]?.close();
  }
  // Four runs at once, no pool: each forked on demand, against four cold ones.
  if (bwrap.usable) {
    const atOnce = [
      { name: "bwrap, four at once, each forked on demand", sandbox: createSandbox({ kind: "bwrap", prewarm: false }) },
      {
        name: "bwrap, four at once, each cold",
        sandbox: createSandbox({ kind: "bwrap", prewarm: false, forkServer: false }),
      },
    ];
    const atOnceDurations = atOnce.map((): number[] => []);
    for (let round = 0; round < Math.max(5, Math.floor(RUNS / 4)); round++) {
      for (const [index, { sandbox }] of atOnce.entries()) atOnceDurations[index]?.push(await fourAtOnce(sandbox));
    }
    for (const [index, { name, sandbox }] of atOnce.entries()) {
      const sorted = (atOnceDurations[index] ?? []).sort((a, b) => a - b);
      backToBackRows.push({ name, p50: percentile(sorted, 0.5), p90: percentile(sorted, 0.9) });
      await sandbox.close();
    }
  }
  // One call across the boundary, timed inside a run: the isolations alternate, run after run.
  const callRows: { name: string; p50: number; p90: number }[] = [];
  const callBackends = [
    { backend: "process backend", kind: "process" as const },
    ...(bwrap.usable ? [{ backend: "bwrap", kind: "bwrap" as const }] : []),
  ];
  for (const { backend, kind } of callBackends) {
    for (const language of ["python", "javascript"] as const) {
      const sandbox = createSandbox({ kind, poolSize: POOL_SIZE });
      const isolations = Object.keys(ISOLATIONS) as TestIsolation[];
      const measured = isolations.map((): { p50: number; p90: number }[] => []);
      for (let run = 0; run < CALL_RUNS; run++) {
        for (const [index, isolation] of isolations.entries()) {
          measured[index]?.push(await callCost(sandbox, language, isolation));
        }
      }
      await sandbox.close();
      for (const [index, isolation] of isolations.entries()) {
        const median = (pick: (figures: { p50: number; p90: number }) => number): number =>
          percentile(
            (measured[index] ?? []).map(pick).sort((a, b) => a - b),
            0.5,
          );
        callRows.push({
          name: `${backend}, ${language}, one call, ${isolation === "process" ? "across the boundary" : "direct (shared)"}`,
          p50: median((figures) => figures.p50),
          p90: median((figures) => figures.p90),
        });
      }
    }
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
  console.log(
    `\none call to add(1, 2) from the tests, timed in the test process (${CALLS} calls a run; median of ${CALL_RUNS} runs' figures)`,
  );
  const callWidth = Math.max(...callRows.map((row) => row.name.length));
  console.log(`${"".padEnd(callWidth)}  p50 ms/call  p90 ms/call`);
  for (const row of callRows) {
    console.log(
      `${row.name.padEnd(callWidth)}  ${row.p50.toFixed(4).padStart(11)}  ${row.p90.toFixed(4).padStart(11)}`,
    );
  }
  const bare = rows[0];
  const cold = rows.find((row) => row.name === "bwrap, cold");
  const warm = rows.find((row) => row.name === "bwrap, pre-warmed");
  const chained = backToBackRows.find((row) => row.name === BWRAP_BACK_TO_BACK);
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
  if (bare && chained)
    console.log(
      `goal (issue 41): bwrap back to back p50 <= 0.3 x bare spawn p50: ${chained.p50.toFixed(2)} / ${bare.p50.toFixed(2)} = ${(chained.p50 / bare.p50).toFixed(2)}: ${verdict(chained.p50 <= 0.3 * bare.p50)}`,
    );
  if (warm && layers)
    console.log(
      `goal (issue 41): bwrap pre-warmed p50 < 2.5 ms with cgroups + seccomp + tmpfs on: ${warm.p50.toFixed(2)} ms, ${layers.text}: ${verdict(layers.all && warm.p50 < 2.5)}`,
    );
  for (const { backend } of callBackends) {
    for (const language of ["python", "javascript"] as const) {
      const named = (isolation: TestIsolation) =>
        rows.find((row) => row.name === `${backend}, pre-warmed, judged ${language}, ${ISOLATIONS[isolation]}`);
      const isolated = named("process");
      const shared = named("shared");
      if (isolated && shared)
        console.log(
          `goal: ${backend} judged ${language} run pre-warmed, tests in own process p50 <= 2 x in the program's process: ${isolated.p50.toFixed(2)} / ${shared.p50.toFixed(2)} = ${(isolated.p50 / shared.p50).toFixed(2)}: ${verdict(isolated.p50 <= 2 * shared.p50)}`,
        );
      const call = (way: string) => callRows.find((row) => row.name === `${backend}, ${language}, one call, ${way}`);
      const across = call("across the boundary");
      const direct = call("direct (shared)");
      if (across && direct)
        console.log(
          `goal: ${backend} ${language} one call across the boundary p50 < 0.2 ms: ${across.p50.toFixed(4)} ms (a direct call ${direct.p50.toFixed(4)} ms): ${verdict(across.p50 < 0.2)}`,
        );
    }
  }
  // The unit suite held `print(1)` once warm under 100 ms on both local backends; a speed target
  // belongs here, where a loaded machine shows up as a figure instead of a failed test.
  for (const row of rows.filter((entry) => entry.name.endsWith("pre-warmed") && !entry.name.startsWith("container"))) {
    console.log(`${row.name} p50 = ${row.p50.toFixed(1)} ms (target < 100: print(1) answered quickly once warm)`);
  }
  const egressRow = (name: string) => rows.find((row) => row.name.startsWith(name));
  const hostBareRow = egressRow(EGRESS_ROWS.hostBare);
  const hostGetRow = egressRow(EGRESS_ROWS.host);
  const egressBare = egressRow(EGRESS_ROWS.bare);
  const egressSetup = egressRow(EGRESS_ROWS.setup);
  const egressGet = egressRow(EGRESS_ROWS.get);
  if (hostBareRow && hostGetRow && egressBare && egressSetup && egressGet) {
    const ms = (value: number): string => `${value.toFixed(1)} ms`;
    console.log(
      `egress: one GET via the proxy in bwrap p50 = ${ms(egressGet.p50)}, ${(egressGet.p50 / hostGetRow.p50).toFixed(2)} x the same GET from the host (${ms(hostGetRow.p50)}); over the cold bwrap run without allowHosts or the request (${ms(egressBare.p50)}) it adds ${ms(egressGet.p50 - egressBare.p50)}: the proxy's setup ${ms(egressSetup.p50 - egressBare.p50)}, the request through it ${ms(egressGet.p50 - egressSetup.p50)} (on the host, the request ${ms(hostGetRow.p50 - hostBareRow.p50)})`,
    );
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
