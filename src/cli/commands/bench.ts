import { mkdir, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { SingleBar } from "cli-progress";
import {
  BENCH_SANDBOX_LIMITS,
  type BenchmarkReport,
  type BenchmarkTask,
  DatasetError,
  FEEDBACK_LABELS,
  type FeedbackMode,
  formatBenchmarkTable,
  formatVerifyReport,
  loadDataset,
  NAMED_DATASETS,
  parseTaskIds,
  renderHtmlReport,
  resolveDatasetPath,
  runBenchmark,
  SandboxPool,
  SIMULATED_MODEL_LABEL,
  SIMULATED_MODEL_NAME,
  SimulatedBenchmarkModel,
  type TaskRunner,
  taskAnchor,
  verifyDataset,
} from "../../benchmark/index.js";
import {
  checkModelConfig,
  createAgent,
  createSandbox,
  parseSettings,
  type Sandbox,
  type SandboxKind,
  type Settings,
  type Strategy,
  UsageError,
} from "../../internal.js";
import { type RunTrace, renderRunReport } from "../../report/index.js";
import { type ModelCallFlags, modelCallsFromFlags } from "../options.js";
import { queueRunner } from "../queue-bench.js";
import { resolveQueueLocation, withQueue } from "../queue-session.js";
import { closeSandboxes } from "../run-lines.js";
import { withStore } from "../session.js";

export interface BenchFlags extends ModelCallFlags {
  dataset: string;
  datasetDir?: string;
  limit?: number;
  tasks?: string;
  concurrency: number;
  maxAttempts?: number;
  tokenBudget?: number;
  timeout?: number;
  model?: string;
  temperature?: number;
  simulated?: boolean;
  feedback: FeedbackMode;
  samples: number;
  candidates?: number;
  strategy?: Strategy[];
  json?: string;
  html?: string;
  verifyDataset?: boolean;
  sandbox?: SandboxKind;
  queue?: boolean;
  postgres?: string;
  db?: string;
  queueSchema?: string;
}

/**
 * Progress on stderr: a live bar when a person is watching, one plain line per task otherwise
 * (CI logs, pipes), so stdout carries only the report.
 */
class BenchProgress {
  private readonly bar: SingleBar | null;

  constructor(total: number, what: string) {
    this.bar = process.stderr.isTTY
      ? new SingleBar({
          stream: process.stderr,
          format: `${what} {bar} {value}/{total} | {last}`,
          barsize: 30,
          hideCursor: true,
          clearOnComplete: true,
        })
      : null;
    this.bar?.start(total, 0, { last: "starting" });
  }

  step(done: number, total: number, line: string): void {
    if (this.bar) this.bar.update(done, { last: line });
    else process.stderr.write(`selfheal bench: [${done}/${total}] ${line}\n`);
  }

  stop(): void {
    this.bar?.stop();
  }
}

async function writeJson(path: string | undefined, value: unknown): Promise<void> {
  if (path === undefined) return;
  await writeFile(path, `${JSON.stringify(value, null, 2)}\n`);
  process.stderr.write(`selfheal bench: wrote ${path}\n`);
}

/** `--verify-dataset`: the judge's own check, no model; exits 1 when the judge cannot be trusted. */
async function verifyCommand(
  flags: BenchFlags,
  tasks: BenchmarkTask[],
  sandbox: Sandbox,
  datasetName: string,
): Promise<number> {
  const progress = new BenchProgress(tasks.length, "verify");
  const report = await verifyDataset({
    tasks,
    sandbox,
    concurrency: flags.concurrency,
    onProgress: ({ done, total, task }) => {
      const caught = task.mutants.filter((mutant) => !mutant.verdict.passed).length;
      const reference = task.canonical.passed ? "reference passes" : `REFERENCE FAILS (${task.canonical.status})`;
      progress.step(done, total, `${task.taskId}: ${reference}, ${caught}/${task.mutants.length} mutants caught`);
    },
  });
  progress.stop();
  process.stdout.write(`${formatVerifyReport(report)}\n`);
  await writeJson(flags.json, { dataset: datasetName, ...report });
  const trusted =
    report.falseFails.length === 0 && report.falsePasses.length === 0 && report.visibleFalseFails.length === 0;
  return trusted ? 0 : 1;
}

/** Each task's run report goes in a folder beside the benchmark report: `bench.html` -> `bench-runs/task-HumanEval-0.html`. */
export function runReportsBeside(html: string): {
  dir: string;
  path: (taskId: string) => string;
  href: (taskId: string) => string;
} {
  const folder = `${basename(html).replace(/\.html?$/i, "")}-runs`;
  const dir = join(dirname(html), folder);
  const file = (taskId: string) => `${taskAnchor(taskId)}.html`;
  return {
    dir,
    path: (taskId) => join(dir, file(taskId)),
    href: (taskId) => `${encodeURIComponent(folder)}/${file(taskId)}`,
  };
}

/** With --queue, a runner that gives each task to the queue's workers; otherwise none (tasks run here). */
async function withRunner<T>(flags: BenchFlags, use: (runner?: TaskRunner) => Promise<T>): Promise<T> {
  if (!flags.queue) return use();
  if (flags.simulated) {
    throw new UsageError("--simulated cannot be used with --queue: the workers build their model from the environment");
  }
  if (flags.record || flags.replay) {
    throw new UsageError(
      "--record and --replay cannot be used with --queue: the workers call the model, not this process",
    );
  }
  const location = resolveQueueLocation(flags);
  return withStore(flags, (store) =>
    withQueue(location, { supervise: false }, (queue) =>
      use(queueRunner(store, queue, createAgent({ checkpointer: store.checkpointer }))),
    ),
  );
}

/** A benchmark run: the table on stdout, and the JSON and HTML reports when asked for. */
async function benchCommand(
  flags: BenchFlags,
  tasks: BenchmarkTask[],
  sandbox: Sandbox,
  settings: Settings,
  datasetName: string,
): Promise<void> {
  let simulated: SimulatedBenchmarkModel | undefined;
  if (flags.simulated) {
    process.stderr.write(`selfheal bench: ${SIMULATED_MODEL_LABEL}\n`);
    simulated = await SimulatedBenchmarkModel.forTasks(tasks, sandbox, { concurrency: flags.concurrency });
  }
  if (flags.feedback === "oracle") process.stderr.write(`selfheal bench: ${FEEDBACK_LABELS.oracle}\n`);
  const progress = new BenchProgress(tasks.length, "bench");
  const runReports = flags.html === undefined ? undefined : runReportsBeside(flags.html);
  if (runReports) await mkdir(runReports.dir, { recursive: true });
  const report: BenchmarkReport = await withRunner(flags, (runner) =>
    runBenchmark({
      tasks,
      sandbox,
      ...(simulated ? { models: { model: simulated } } : {}),
      modelCalls: modelCallsFromFlags(flags),
      ...(runner ? { runner } : {}),
      // With the queue every task is handed out at once: the workers' own concurrency is the limit.
      concurrency: runner ? tasks.length : flags.concurrency,
      settings,
      feedback: flags.feedback,
      samples: flags.samples,
      ...(flags.strategy ? { strategies: flags.strategy } : {}),
      dataset: datasetName,
      modelLabel: simulated
        ? { name: SIMULATED_MODEL_NAME, simulated: true, label: SIMULATED_MODEL_LABEL }
        : { name: settings.model, simulated: false },
      ...(runReports
        ? {
            onRunTrace: (taskId: string, trace: RunTrace) => writeFile(runReports.path(taskId), renderRunReport(trace)),
          }
        : {}),
      onProgress: ({ done, total, outcome }) => {
        const tokens = outcome.inputTokens + outcome.outputTokens;
        progress.step(
          done,
          total,
          `${outcome.taskId}: ${outcome.status} in ${outcome.attempts} attempt(s), hidden tests: ${outcome.solved ? "solved" : "not solved"}, ${tokens} tokens`,
        );
      },
    }),
  );
  progress.stop();
  process.stdout.write(`${formatBenchmarkTable(report)}\n`);
  await writeJson(flags.json, report);
  if (flags.html !== undefined && runReports) {
    await writeFile(flags.html, renderHtmlReport(report, { runReportHref: runReports.href }));
    process.stderr.write(`selfheal bench: wrote ${flags.html} and the run report of each task in ${runReports.dir}\n`);
  }
}

async function runBenchCommand(flags: BenchFlags): Promise<number> {
  const tasks = await loadDataset({
    dataset: flags.dataset,
    datasetDir: flags.datasetDir,
    limit: flags.limit,
    taskIds: flags.tasks === undefined ? undefined : parseTaskIds(flags.tasks, flags.dataset),
  });
  const datasetName = flags.dataset in NAMED_DATASETS ? flags.dataset : resolveDatasetPath({ dataset: flags.dataset });
  // Validate settings before any sandbox or model work, so a bad flag fails in milliseconds.
  const settings = parseSettings({
    // The agent's runs keep the benchmark sandbox's limits: the executor passes a run's limits from
    // its settings, and the judge's reasons for them (verify.ts) hold for the agent's programs too.
    ...BENCH_SANDBOX_LIMITS,
    maxAttempts: flags.maxAttempts,
    tokenBudget: flags.tokenBudget,
    timeoutMs: flags.timeout,
    temperature: flags.temperature,
    model: flags.simulated ? SIMULATED_MODEL_NAME : flags.model,
    sandbox: flags.sandbox,
    candidates: flags.candidates,
  });
  // With --queue the workers call the model, not this process; a replay answers from its folder.
  if (!flags.verifyDataset && !flags.simulated && !flags.queue && !flags.replay) checkModelConfig();

  const makeSandbox = () =>
    createSandbox({ kind: settings.sandbox, prewarm: ["python"], limits: BENCH_SANDBOX_LIMITS });
  const sandbox = makeSandbox();
  // The verify has up to two batch runs in flight per lane: a warm interpreter ready for each.
  const spares = flags.verifyDataset ? Array.from({ length: 2 * flags.concurrency - 1 }, makeSandbox) : [];
  try {
    if (flags.verifyDataset) {
      return await verifyCommand(flags, tasks, new SandboxPool([sandbox, ...spares]), datasetName);
    }
    await benchCommand(flags, tasks, sandbox, settings, datasetName);
    return 0;
  } finally {
    await closeSandboxes([sandbox, ...spares]);
  }
}

/** `selfheal bench`; a bad dataset is a usage problem: say which file and line, and exit 2 like other usage errors. */
export async function benchAction(flags: BenchFlags): Promise<number> {
  try {
    return await runBenchCommand(flags);
  } catch (error) {
    if (!(error instanceof DatasetError)) throw error;
    process.stderr.write(`selfheal: ${error.message}\n`);
    return 2;
  }
}
