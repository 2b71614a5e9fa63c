/**
 * The judge's own check (`selfheal bench --verify-dataset`) on a dataset, every program alone (the
 * baseline, as before batch runs), alone on a warm pool of sandboxes, and in batch runs on that pool,
 * in turn, in one run: wall time, the load, and whether every row reached the same verdicts. (No
 * CPU column: the batch's forks are reaped inside the sandbox, out of this process's rusage.)
 * The goal (issue 29): HumanEval in < 20 s on 2 cores. Figures only, no bound.
 *
 * Beside today's judge, which runs the tests in a process of their own, the same check the old way
 * (issue 36): the tests appended to the program and run in its process (`isolation: "shared"`), alone
 * on the pool and in batch runs, each row right after its counterpart; then whether the two ways
 * reached the same verdicts, and the goal: tests in their own process <= 1.5 x the old way's wall time.
 * And (issue 41) the pool's rows again on sandboxes without the fork server, whose pre-warmed
 * interpreters each start cold: the goal, faster with it than without.
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
import { createSandbox, type TestIsolation } from "../src/internal.js";

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
const makeSandbox = (forkServer = true) =>
  createSandbox({ prewarm: ["python"], limits: BENCH_SANDBOX_LIMITS, forkServer });
const members = Array.from({ length: 2 * concurrency }, () => makeSandbox());
// Issue 41: the same pool whose warm interpreters each start cold instead of being forked.
const coldMembers = Array.from({ length: 2 * concurrency }, () => makeSandbox(false));
await Promise.all([...members, ...coldMembers].map((member) => member.prewarm(["python"])));
const sandbox = members[0]!;
// As the CLI's verify: a warm interpreter for each of the two batch runs a lane may have in flight.
const pool = new SandboxPool(members);
const coldPool = new SandboxPool(coldMembers);
const BASELINE = "every program alone (baseline)";
const ALONE = "alone, a warm pool of sandboxes";
const BATCH = "batch runs, the warm pool";
/** The old way's rows, each named after today's row it is compared with. */
const SHARED = " + tests in program's process";
const NO_FORK_SERVER = ", no fork server";
const ways: ReadonlyArray<readonly [string, typeof sandbox | SandboxPool, boolean, TestIsolation]> = [
  [BASELINE, sandbox, false, "process"],
  [ALONE, pool, false, "process"],
  [`${ALONE}${NO_FORK_SERVER}`, coldPool, false, "process"],
  [`${ALONE}${SHARED}`, pool, false, "shared"],
  [BATCH, pool, true, "process"],
  [`${BATCH}${NO_FORK_SERVER}`, coldPool, true, "process"],
  [`${BATCH}${SHARED}`, pool, true, "shared"],
];
const rows: Array<{ label: string; isolation: TestIsolation; seconds: number; load: string; report: VerifyReport }> =
  [];
try {
  for (let round = 0; round < repeat; round++) {
    for (const [label, judgeSandbox, batching, isolation] of ways) {
      await new Promise((resolve) => setTimeout(resolve, settleSeconds * 1000));
      const loadBefore = loadavg()[0]!;
      const report = await verifyDataset({ tasks, sandbox: judgeSandbox, concurrency, batching, isolation });
      const load = `${loadBefore.toFixed(1)}-${loadavg()[0]!.toFixed(1)}`;
      rows.push({ label, isolation, seconds: report.durationMs / 1000, load, report });
    }
  }
} finally {
  await pool.close();
  await coldPool.close();
}

console.log(
  `bench:judge: ${dataset}, ${tasks.length} tasks, sandbox ${sandbox.kind}, concurrency ${concurrency}, ` +
    `${availableParallelism()} cores (shared: the load is the 1-minute average before-after each row; ` +
    `${settleSeconds} s idle before each)`,
);
const width = Math.max(...ways.map(([label]) => label.length));
console.log(`  ${"way".padEnd(width)} wall s   load       references  mutants caught`);
for (const row of rows) {
  const { canonicalPassed, tasks: total, mutantsCaught, mutantsJudged } = row.report;
  console.log(
    `  ${row.label.padEnd(width)} ${row.seconds.toFixed(1).padStart(6)}   ` +
      `${row.load.padEnd(10)} ${`${canonicalPassed}/${total}`.padStart(10)}  ${mutantsCaught}/${mutantsJudged}`,
  );
}
const byVerdicts = (row: (typeof rows)[number]) => JSON.stringify(verdicts(row.report));
const today = rows.filter((row) => row.isolation === "process");
const baseline = today.find((row) => row.label === BASELINE)!;
const same = today.every((row) => byVerdicts(row) === byVerdicts(baseline));
console.log(
  `  same verdicts in every row of today's judge: ${same ? "yes" : "NO"}   goal: batch runs < 20 s on 2 cores`,
);
if (!same) process.exitCode = 1;
for (const label of [ALONE, BATCH]) {
  const forked = rows.find((row) => row.label === label);
  const cold = rows.find((row) => row.label === `${label}${NO_FORK_SERVER}`);
  if (forked && cold)
    console.log(
      `  goal (issue 41): ${label} faster with the fork server than without: ${forked.seconds.toFixed(1)} s against ${cold.seconds.toFixed(1)} s: ${forked.seconds < cold.seconds ? "met" : "NOT met"}`,
    );
}

/** Where the old way's verdicts differ from today's (same dataset, same mutants): task, mutant, verdicts. */
function differences(isolated: VerifyReport, shared: VerifyReport): string[] {
  const found: string[] = [];
  const sharedTasks = new Map(shared.perTask.map((task) => [task.taskId, task]));
  for (const task of isolated.perTask) {
    const other = sharedTasks.get(task.taskId);
    if (!other) {
      found.push(`${task.taskId} missing`);
      continue;
    }
    const pairs: Array<[string, boolean, boolean | undefined]> = [
      ["reference", task.canonical.passed, other.canonical.passed],
      ...(task.visible ? [["visible", task.visible.passed, other.visible?.passed] as [string, boolean, boolean]] : []),
      ...task.mutants.map((mutant): [string, boolean, boolean | undefined] => [
        mutant.id,
        mutant.verdict.passed,
        other.mutants.find((candidate) => candidate.id === mutant.id)?.verdict.passed,
      ]),
    ];
    for (const [what, own, old] of pairs) {
      if (own !== old) found.push(`${task.taskId} ${what}: own process ${own}, program's process ${old}`);
    }
    if (task.mutants.length !== other.mutants.length) found.push(`${task.taskId}: the mutants differ`);
  }
  return found;
}

// The time ratio and the verdicts, row by row against the row it names, over every round.
for (const label of [ALONE, BATCH]) {
  const isolated = rows.filter((row) => row.label === label);
  const shared = rows.filter((row) => row.label === `${label}${SHARED}`);
  if (isolated.length === 0 || shared.length === 0) continue;
  const seconds = (list: typeof rows) => list.reduce((sum, row) => sum + row.seconds, 0);
  const ratio = seconds(isolated) / seconds(shared);
  const differ = isolated.flatMap((row, round) =>
    shared[round] ? differences(row.report, shared[round]!.report) : [],
  );
  console.log(
    `  ${label}: tests in own process ${seconds(isolated).toFixed(1)} s vs program's process ${seconds(shared).toFixed(1)} s = ` +
      `${ratio.toFixed(2)} x (goal <= 1.5 x: ${ratio <= 1.5 ? "met" : "NOT met"}); ` +
      `same verdicts: ${differ.length === 0 ? "yes" : `NO, ${differ.length} differ`}`,
  );
  for (const line of differ.slice(0, 20)) console.log(`    ${line}`);
}
