/**
 * What runtime values cost a run that passes (a failing run pays more, once, to show them): the
 * same programs run plain, with the harness (failed asserts' operands and frame values), and with
 * the harness and the call trace of the tests, side by side. Programs: `print(1)` (bench:sandbox's
 * workload), HumanEval tasks' canonical solutions with their tests (a `check(candidate)` of many
 * asserts), and `console.log(1)` for Node. Prints a table; asserts nothing.
 *
 *   npm run bench:values [-- --runs 40 --tasks 3 --kind bwrap]
 */
import { loadavg } from "node:os";
import { parseArgs } from "node:util";

import { buildHiddenTests, loadDataset } from "../src/benchmark/dataset.js";
import { createSandbox, type Language, type SandboxKind } from "../src/sandbox/index.js";
import { assembleProgram, settleCompletion } from "../src/tools/assemble.js";
import { instrumentProgram } from "../src/tools/runtime-values/index.js";
import { type Contender, latencies, percentile } from "./timing.js";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "40" },
    tasks: { type: "string", default: "3" },
    kind: { type: "string", default: "auto" },
  },
});
const RUNS = Number(values.runs);
const kind = values.kind as SandboxKind;
const sandbox = createSandbox({ kind, prewarm: ["python", "javascript"] });

type Mode = "plain" | "values" | "values+calls";
const MODES: Mode[] = ["plain", "values", "values+calls"];

function contender(
  workload: string,
  language: Language,
  code: string,
  tests: string | undefined,
  mode: Mode,
): Contender {
  const program = assembleProgram(code, tests, language);
  return {
    name: `${workload} | ${mode}`,
    // Both languages: a run schedules its language's next interpreter, and a Node one starting
    // during the next timed Python run would be billed to it.
    between: () => sandbox.prewarm(["python", "javascript"]),
    runOnce: async () => {
      // A fresh nonce per run, as the executor makes one.
      const instrumented =
        mode === "plain" ? null : instrumentProgram(program, language, { calls: mode === "values+calls" });
      const result = await sandbox.run({
        language,
        code: instrumented?.code ?? program.source,
        ...(instrumented ? { files: instrumented.files } : {}),
      });
      // A run that skipped its tests would be fast for the wrong reason: the completion mark proves they ran.
      const settled = settleCompletion(result, program);
      if (settled.status !== "ok" || settled.testsCompleted === false) {
        throw new Error(`${workload} (${mode}): ${result.status} ${result.stderr.slice(-500)}`);
      }
    },
  };
}

const workloads: Array<{ name: string; language: Language; code: string; tests?: string; modes: Mode[] }> = [
  { name: "print(1)", language: "python", code: "print(1)\n", modes: ["plain", "values"] },
  { name: "console.log(1)", language: "javascript", code: "console.log(1);\n", modes: ["plain", "values"] },
];
for (const task of await loadDataset({ limit: Number(values.tasks) })) {
  workloads.push({
    name: `${task.task_id} + tests`,
    language: "python",
    code: task.prompt + task.canonical_solution,
    tests: buildHiddenTests(task),
    modes: MODES,
  });
}

const contenders = workloads.flatMap((workload) =>
  workload.modes.map((mode) => contender(workload.name, workload.language, workload.code, workload.tests, mode)),
);
console.log(
  `sandbox ${sandbox.kind}, pre-warmed; ${RUNS} runs each, round-robin; load average ${loadavg()[0]?.toFixed(2)}`,
);
for (const entry of contenders) for (let run = 0; run < 3; run++) await entry.runOnce();
const durations = await latencies(contenders, RUNS);
const p50 = new Map(contenders.map((entry, index) => [entry.name, percentile(durations[index] ?? [], 0.5)]));
const width = Math.max(...contenders.map((entry) => entry.name.length));
console.log(`\n${"".padEnd(width)}  p50 ms  p90 ms  vs plain`);
for (const [index, entry] of contenders.entries()) {
  const plain = p50.get(entry.name.replace(/\| .*$/, "| plain")) ?? Number.NaN;
  const median = p50.get(entry.name) ?? Number.NaN;
  console.log(
    `${entry.name.padEnd(width)}  ${median.toFixed(1).padStart(6)}  ${percentile(durations[index] ?? [], 0.9)
      .toFixed(1)
      .padStart(6)}  ${`${(((median - plain) / plain) * 100).toFixed(1)}%`.padStart(8)}`,
  );
}
console.log(`load average at the end ${loadavg()[0]?.toFixed(2)}`);
const keepAlive = setInterval(() => undefined, 1_000);
await sandbox.close();
clearInterval(keepAlive);
