import type { Agent, AgentState } from "../../internal.js";
import type { QueuedRun } from "../../queue/index.js";
import {
  describeLocation,
  openRunIndex,
  type RunIndex,
  type RunRecord,
  resolveStoreLocation,
  storeExists,
} from "../../store/index.js";
import { EXIT } from "../exit.js";
import type { QueueFlags } from "../queue-options.js";
import { resolveQueueLocation } from "../queue-session.js";
import { formatTable } from "../table.js";

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
 * checkpointed there. Newest update first. A thread whose last checkpoint says how it ended is
 * read from that checkpoint alone (on SQLite without loading LangGraph); only the others (running,
 * stopped mid-way, awaiting approval) need the graph to say what comes next, so it loads only for them.
 */
export async function listRuns(index: RunIndex, limit: number, queued: QueuedRun[] = []): Promise<RunRow[]> {
  // A thread submitted again after a cancel has several jobs; the newest (listed last) is the one that counts.
  const jobs = new Map(queued.map(({ threadId, output: _output, ...job }) => [threadId, job]));
  const records = new Map((await index.listRuns()).map((record) => [record.threadId, record]));
  const heads = new Map((await index.listHeads()).map((head) => [head.threadId, head]));
  // Loaded at the first thread that has not ended, once.
  let graph: { agent: Agent; describeStatus: (snapshot: Awaited<ReturnType<Agent["getState"]>>) => string } | undefined;
  const rows: RunRow[] = [];
  for (const threadId of new Set([...records.keys(), ...heads.keys()])) {
    const record = records.get(threadId);
    const head = heads.get(threadId);
    // A row that cannot be read shows as such; the listing goes on.
    let state: { values: Partial<AgentState>; status: string; createdAt?: string };
    try {
      const values = (head?.values ?? {}) as Partial<AgentState>;
      // As describeStatus reads a snapshot: a status other than running, and no pause, is how it ended.
      if (head && !head.unread && values.status && values.status !== "running" && !head.interrupted) {
        state = { values, status: values.status, createdAt: head.createdAt };
      } else {
        if (!graph) {
          const [{ createAgent, describeStatus }, store] = await Promise.all([
            import("../../internal.js"),
            index.openStore(),
          ]);
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

export interface RunsFlags extends QueueFlags {
  json?: boolean;
  limit: number;
}

/** `selfheal runs`: the store's runs, newest first; an empty list where there is no store yet. */
export async function showRuns(flags: RunsFlags): Promise<number> {
  const location = resolveStoreLocation(flags);
  // Looking creates no database or `.selfheal/`.
  if (!storeExists(location)) {
    process.stdout.write(flags.json ? "[]\n" : `no runs yet: there is no run store at ${describeLocation(location)}\n`);
    return EXIT.passed;
  }
  const index = await openRunIndex(location);
  try {
    const queued =
      location.kind === "postgres"
        ? await (await import("../../queue/index.js")).readQueuedRuns(resolveQueueLocation(flags))
        : undefined;
    const rows = await listRuns(index, flags.limit, queued);
    process.stdout.write(flags.json ? `${JSON.stringify(rows, null, 2)}\n` : formatRuns(rows));
    return EXIT.passed;
  } finally {
    await index.close();
  }
}
