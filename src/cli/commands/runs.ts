import type { Command } from "commander";
import type { Agent, AgentState } from "../../index.js";
import type { QueuedRun } from "../../queue/index.js";
import { describeLocation, type RunRecord, type RunStore } from "../../store/index.js";
import { EXIT } from "../exit.js";
import { positiveInteger } from "../options.js";
import { addQueueOptions, type QueueFlags, resolveQueueLocation } from "../queue-session.js";
import { addStoreOptions, withExistingStore } from "../session.js";
import { formatTable } from "../table.js";
import { summaryOf } from "./catalog.js";

/** One thread, as `selfheal runs` shows it. */
export interface RunRow {
  threadId: string;
  task: string;
  /** The run's status, or `awaiting approval`, or `unfinished` when it stopped (or is running) mid-way. */
  status: string;
  attempts: number;
  tokens: number;
  updatedAt?: string;
  forkedFrom?: RunRecord["forkedFrom"];
  /** The run's job, for a run given to the queue by `selfheal submit`. */
  queue?: Omit<QueuedRun, "threadId" | "output">;
}

/**
 * Every thread in the store: the ones the CLI started or forked, and any other run a program
 * checkpointed there (found by its first, input checkpoint). Newest update first. A thread whose
 * last checkpoint says how it ended is read from that checkpoint alone; only the others (running,
 * stopped mid-way, awaiting approval) need the graph to say what comes next, so it loads only for them.
 */
export async function listRuns(store: RunStore, limit: number, queued: QueuedRun[] = []): Promise<RunRow[]> {
  // A thread submitted again after a cancel has several jobs; the newest (listed last) is the one that counts.
  const jobs = new Map(queued.map(({ threadId, output: _output, ...job }) => [threadId, job]));
  const records = new Map((await store.listRuns()).map((record) => [record.threadId, record]));
  const threadIds = new Set(records.keys());
  for await (const tuple of store.checkpointer.list({ configurable: {} }, { filter: { step: -1 } })) {
    const threadId = tuple.config.configurable?.thread_id;
    if (typeof threadId === "string") threadIds.add(threadId);
  }
  // Loaded at the first thread that has not ended, once.
  let graph: { agent: Agent; describeStatus: (snapshot: Awaited<ReturnType<Agent["getState"]>>) => string } | undefined;
  const rows: RunRow[] = [];
  for (const threadId of threadIds) {
    const record = records.get(threadId);
    // A row that cannot be read shows as such; the listing goes on.
    let state: { values: Partial<AgentState>; status: string; createdAt?: string };
    try {
      const config = { configurable: { thread_id: threadId, checkpoint_ns: "" } };
      const head = await store.checkpointer.getTuple(config);
      const values = (head?.checkpoint.channel_values ?? {}) as Partial<AgentState>;
      const interrupted = head?.pendingWrites?.some(([, channel]) => channel === "__interrupt__") ?? false;
      // As describeStatus reads a snapshot: a status other than running, and no pause, is how it ended.
      if (head && values.status && values.status !== "running" && !interrupted) {
        state = { values, status: values.status, createdAt: head.checkpoint.ts };
      } else {
        if (!graph) {
          const { createAgent, describeStatus } = await import("../../index.js");
          graph = { agent: createAgent({ checkpointer: store.checkpointer }), describeStatus };
        }
        const snapshot = await graph.agent.getState({ configurable: { thread_id: threadId } });
        state = {
          values: snapshot.values,
          status: snapshot.createdAt ? graph.describeStatus(snapshot) : "not started",
          createdAt: snapshot.createdAt,
        };
      }
    } catch (error) {
      const status = `unreadable: ${error instanceof Error ? error.message : String(error)}`;
      rows.push({ threadId, task: record?.task ?? "", status, attempts: 0, tokens: 0, updatedAt: record?.createdAt });
      continue;
    }
    const { values } = state;
    const job = jobs.get(threadId);
    const runStatus = record?.unreadable ? `${state.status} (${record.unreadable})` : state.status;
    rows.push({
      threadId,
      task: values.task ?? record?.task ?? "",
      status: job ? describeQueuedStatus(job, runStatus) : runStatus,
      attempts: values.attempt ?? 0,
      tokens: values.usage?.totalTokens ?? 0,
      updatedAt: state.createdAt ?? record?.createdAt,
      ...(record?.forkedFrom ? { forkedFrom: record.forkedFrom } : {}),
      ...(job ? { queue: job } : {}),
    });
  }
  rows.sort((a, b) => (b.updatedAt ?? "").localeCompare(a.updatedAt ?? ""));
  return rows.slice(0, limit);
}

function secondsAgo(iso: string, now: number): string {
  return `${Math.max(0, Math.round((now - Date.parse(iso)) / 1000))}s ago`;
}

/**
 * A queued run's status says where its job is: waiting (and why, after a failed delivery), on
 * which worker and how lately it was heard from, dead-lettered with the reason, or cancelled.
 * A finished job shows the run's own status, as any other run.
 */
export function describeQueuedStatus(job: NonNullable<RunRow["queue"]>, runStatus: string, now = Date.now()): string {
  switch (job.state) {
    case "queued":
      return job.retries > 0 || job.reason ? `queued (retry ${job.retries}: ${job.reason ?? "worker lost"})` : "queued";
    case "running": {
      const where = job.worker ? ` on ${job.worker}` : "";
      const beat = job.heartbeatAt ? `, heartbeat ${secondsAgo(job.heartbeatAt, now)}` : "";
      return `running${where}${beat}${job.step ? `, after ${job.step}` : ""}`;
    }
    case "dead-lettered":
      return `dead-lettered: ${job.reason ?? "no reason recorded"}`;
    case "cancelled":
      return "cancelled";
    case "finished":
      return runStatus;
  }
}

const oneLine = (text: string, width: number) => {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > width ? `${flat.slice(0, width - 1)}…` : flat;
};

export function formatRuns(rows: RunRow[]): string {
  if (rows.length === 0) return "no runs yet\n";
  return formatTable(
    ["thread", "status", "attempts", "tokens", "updated", "task"],
    rows.map((row) => [
      row.threadId,
      row.status,
      String(row.attempts),
      String(row.tokens),
      row.updatedAt ? row.updatedAt.replace("T", " ").replace(/\.\d+Z$/, "Z") : "-",
      oneLine(row.forkedFrom ? `${row.task} (fork of ${row.forkedFrom.threadId})` : row.task, 60),
    ]),
  );
}

/** `selfheal runs`. */
export function registerRunsCommand(program: Command): void {
  const command = program
    .command("runs")
    .description(summaryOf("runs"))
    .option("--limit <n>", "show at most N runs, newest first", positiveInteger, 50)
    .option("--json", "print JSON");
  addQueueOptions(addStoreOptions(command)).action(async (flags: QueueFlags & { json?: boolean; limit: number }) => {
    process.exitCode = await withExistingStore(
      flags,
      async (store) => {
        const queued =
          store.location.kind === "postgres"
            ? await (await import("../../queue/index.js")).readQueuedRuns(resolveQueueLocation(flags))
            : undefined;
        const rows = await listRuns(store, flags.limit, queued);
        process.stdout.write(flags.json ? `${JSON.stringify(rows, null, 2)}\n` : formatRuns(rows));
        return EXIT.passed;
      },
      (location) => {
        process.stdout.write(
          flags.json ? "[]\n" : `no runs yet: there is no run store at ${describeLocation(location)}\n`,
        );
        return EXIT.passed;
      },
    );
  });
}
