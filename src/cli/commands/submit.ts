import { randomUUID } from "node:crypto";
import { z } from "zod";
import { formatIssues, RunInputSchema, type Settings } from "../../internal.js";
import { DEFAULT_DELIVERY, type DeliveryPolicy } from "../../names.js";
import type { RunJobData } from "../../queue/index.js";
import type { RunStore } from "../../store/index.js";
import { EXIT } from "../exit.js";
import { settingsWithFlags } from "../flag-settings.js";
import { readFlagFile, type SettingFlags } from "../options.js";
import type { QueueFlags } from "../queue-options.js";
import { resolveQueueLocation, withQueue } from "../queue-session.js";
import { threadExists, UsageError, withStore } from "../session.js";

/** One line of `--file tasks.jsonl`: a run's input, and optionally its thread id and priority. */
export const SubmittedTaskSchema = RunInputSchema.extend({
  thread: z.string().min(1).optional(),
  priority: z.number().int().optional(),
});
export type SubmittedTask = z.input<typeof SubmittedTaskSchema>;

export interface SubmitFlags extends SettingFlags, QueueFlags {
  file?: string;
  language: string;
  tests?: string;
  thread?: string;
  priority?: number;
  retries?: number;
  retryDelay?: number;
  expireIn?: number;
  json?: boolean;
}

/** Parses a JSONL file of tasks; a bad line is reported with its number, and nothing is submitted. */
export function parseTaskLines(text: string, file: string): SubmittedTask[] {
  return text
    .split("\n")
    .map((line, index) => ({ line: line.trim(), number: index + 1 }))
    .filter(({ line }) => line !== "")
    .map(({ line, number }) => {
      let json: unknown;
      try {
        json = JSON.parse(line);
      } catch {
        throw new UsageError(`${file}:${number}: not JSON`);
      }
      const parsed = SubmittedTaskSchema.safeParse(json);
      if (!parsed.success) throw new UsageError(`${file}:${number}: ${formatIssues(parsed.error)}`);
      return parsed.data;
    });
}

async function tasksFromFlags(task: string | undefined, flags: SubmitFlags): Promise<SubmittedTask[]> {
  if (task && flags.file) throw new UsageError("give a task or --file, not both");
  if (flags.file) {
    const text = await readFlagFile("--file", flags.file);
    const tasks = parseTaskLines(text, flags.file);
    if (tasks.length === 0) throw new UsageError(`--file: ${flags.file} has no tasks`);
    if (flags.thread) throw new UsageError("--thread names one run: give each line of --file a thread instead");
    return tasks.map((line) => ({ ...line, priority: line.priority ?? flags.priority }));
  }
  if (!task) throw new UsageError("give a task, or --file with one JSON task per line");
  const tests = flags.tests ? await readFlagFile("--tests", flags.tests) : undefined;
  const parsed = SubmittedTaskSchema.safeParse({
    task,
    language: flags.language,
    tests,
    thread: flags.thread,
    priority: flags.priority,
  });
  if (!parsed.success) throw new UsageError(formatIssues(parsed.error));
  return [parsed.data];
}

/** Records each run in the store (so workers find its settings) and returns the jobs to send. */
async function recordRuns(
  store: RunStore,
  tasks: SubmittedTask[],
  settings: Settings,
): Promise<Array<RunJobData & { priority?: number }>> {
  const jobs = tasks.map(({ thread, priority, ...input }) => ({
    threadId: thread ?? randomUUID(),
    input: RunInputSchema.parse(input),
    priority,
  }));
  const ids = new Set<string>();
  for (const job of jobs) {
    if (ids.has(job.threadId)) throw new UsageError(`thread ${job.threadId} is given twice`);
    ids.add(job.threadId);
    if (await threadExists(store, job.threadId)) throw new UsageError(`thread ${job.threadId} already has a run`);
  }
  const createdAt = new Date().toISOString();
  for (const job of jobs) await store.saveRun({ threadId: job.threadId, task: job.input.task, settings, createdAt });
  return jobs;
}

/** `selfheal submit`: enqueues runs for `selfheal worker`s and prints their thread ids. */
export async function submitRuns(task: string | undefined, flags: SubmitFlags): Promise<number> {
  const tasks = await tasksFromFlags(task, flags);
  const settings = settingsWithFlags({}, flags);
  const location = resolveQueueLocation(flags);
  const delivery: DeliveryPolicy = {
    ...DEFAULT_DELIVERY,
    ...(flags.retries !== undefined ? { retryLimit: flags.retries } : {}),
    ...(flags.retryDelay !== undefined ? { retryDelaySeconds: flags.retryDelay } : {}),
    ...(flags.expireIn !== undefined ? { expireInSeconds: flags.expireIn } : {}),
  };
  return withStore(flags, async (store) => {
    const jobs = await recordRuns(store, tasks, settings);
    const jobIds = await withQueue(location, { supervise: false }, (queue) => queue.submit(jobs, delivery));
    const submitted = jobs.map((job, index) => ({ threadId: job.threadId, jobId: jobIds[index] }));
    process.stdout.write(
      flags.json ? `${JSON.stringify(submitted, null, 2)}\n` : submitted.map((entry) => `${entry.threadId}\n`).join(""),
    );
    return EXIT.passed;
  });
}
