/**
 * The judge's own check (`selfheal bench --verify-dataset`) on a dataset, every program alone (the
 * baseline, as before batch runs), alone on a warm pool of sandboxes, and in batch runs on that pool,
 * in turn, in one run: wall time, the load, and whether every row reached the same verdicts. (No
 * CPU column: the batch's forks are reaped inside the sandbox, out of this process's rusage.)
 * The goal (issue 29): HumanEval in < 20 s on 2 cores. Figures only, no bound.
 *
 * Before each row the machine is left idle for `--settle` seconds (untimed): the row after ~870
 * sandbox runs paid for something they left going (the batch row: 20.9 s right after, 18.4 s
 * after 20 s idle), most likely their teardown (unmounts, cgroup and work dir removals).
 *
 * Run: npm run bench:judge [-- --dataset humaneval --limit 164 --concurrency 2 --repeat 1 --settle 20]
 */
import { availableParallelism, loadavg } from "node:os";
import {
  BENCH_SANDBOX_LIMITS,
  loadDataset,
  SandboxPool,
  type VerifyReport,
  verifyDataset,
} from "../src/benchmark/index.js";
import { createSandbox } from "../src/index.js";

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? (args[at + 1] ?? fallback) : fallback;
};
const dataset = option("dataset", "humaneval");
const limit = Number(option("limit", "0")) || undefined;
const concurrency = Number(option("concurrency", "2"));
const repeat = Number(option("repeat", "1"));
const settleSeconds = Number(option("settle", "20"));

/** The verdicts the report rests on, for comparing two ways of reaching them. */
function verdicts(report: VerifyReport) {
  return {
    canonicalPassed: report.canonicalPassed,
    falseFails: report.falseFails.map((fail) => fail.taskId),
    visibleFalseFails: report.visibleFalseFails.map((fail) => fail.taskId),
    mutantsJudged: report.mutantsJudged,
    mutantsCaught: report.mutantsCaught,
    falsePasses: report.falsePasses.map((pass) => `${pass.taskId} ${pass.mutantId}`),
    byMutant: report.perTask.flatMap((task) =>
      task.mutants.map((mutant) => `${task.taskId} ${mutant.id} ${mutant.verdict.passed}`),
    ),
  };
}

const tasks = await loadDataset({ dataset, limit });
const makeSandbox = () => createSandbox({ prewarm: ["python"], limits: BENCH_SANDBOX_LIMITS });
const members = Array.from({ length: 2 * concurrency }, makeSandbox);
await Promise.all(members.map((member) => member.prewarm(["python"])));
const sandbox = members[0]!;
// As the CLI's verify: a warm interpreter for each of the two batch runs a lane may have in flight.
const pool = new SandboxPool(members);
const ways = [
  ["every program alone (baseline)", sandbox, false],
  ["alone, a warm pool of sandboxes", pool, false],
  ["batch runs, the warm pool", pool, true],
] as const;
const rows: Array<{ label: string; seconds: number; load: string; report: VerifyReport }> = [];
try {
  for (let round = 0; round < repeat; round++) {
    for (const [label, judgeSandbox, batching] of ways) {
      await new Promise((resolve) => setTimeout(resolve, settleSeconds * 1000));
      const loadBefore = loadavg()[0]!;
      const report = await verifyDataset({ tasks, sandbox: judgeSandbox, concurrency, batching });
      const load = `${loadBefore.toFixed(1)}-${loadavg()[0]!.toFixed(1)}`;
      rows.push({ label, seconds: report.durationMs / 1000, load, report });
    }
  }
} finally {
  await pool.close();
}

console.log(
  `bench:judge: ${dataset}, ${tasks.length} tasks, sandbox ${sandbox.kind}, concurrency ${concurrency}, ` +
    `${availableParallelism()} cores (shared: the load is the 1-minute average before-after each row; ` +
    `${settleSeconds} s idle before each)`,
);
console.log("  way                              wall s   load       references  mutants caught");
for (const row of rows) {
  const { canonicalPassed, tasks: total, mutantsCaught, mutantsJudged } = row.report;
  console.log(
    `  ${row.label.padEnd(32)} ${row.seconds.toFixed(1).padStart(6)}   ` +
      `${row.load.padEnd(10)} ${`${canonicalPassed}/${total}`.padStart(10)}  ${mutantsCaught}/${mutantsJudged}`,
  );
}
const baseline = rows.find((row) => row.label.startsWith("every"))!;
const same = rows.every((row) => JSON.stringify(verdicts(row.report)) === JSON.stringify(verdicts(baseline.report)));
console.log(`  same verdicts in every row: ${same ? "yes" : "NO"}   goal: batch runs < 20 s on 2 cores`);
if (!same) process.exitCode = 1;
