import type { BaseCheckpointSaver, StateSnapshot } from "@langchain/langgraph";
import { type Agent, type AgentState, createAgent } from "../../internal.js";
import { EXIT } from "../exit.js";
import { noSuchRunError, type StoreFlags, withThreadStore } from "../session.js";
import { formatTable } from "../table.js";

/** One checkpoint of a thread, as `selfheal history` shows it. */
export interface CheckpointRow {
  step: number;
  /** The node(s) whose step wrote this checkpoint; `input` or `fork` when no node did. */
  node: string;
  attempt: number;
  status: string;
  /** What runs next from here; empty at the end of the run. */
  next: string[];
  checkpointId: string;
  createdAt?: string;
  awaitingApproval: boolean;
}

/** Keys LangGraph keeps in `versions_seen` for its own bookkeeping (input, resumes), not for nodes. */
const INTERNAL_KEYS = new Set(["__input__", "__interrupt__"]);

/**
 * LangGraph records, per node, the channel versions it last saw; the nodes whose record changed
 * between a checkpoint and its parent are the ones that ran in that step, i.e. its writers.
 */
function writersOf(seen: Record<string, unknown>, parentSeen: Record<string, unknown> | undefined): string[] {
  return Object.keys(seen).filter(
    (node) => !INTERNAL_KEYS.has(node) && JSON.stringify(seen[node]) !== JSON.stringify(parentSeen?.[node]),
  );
}

function nodeLabel(writers: string[], source: string | undefined): string {
  if (writers.length > 0) return writers.map((node) => (node === "__start__" ? "start" : node)).join(", ");
  return source === "loop" || source === undefined ? "input" : source;
}

/** The checkpoints of a thread, oldest first. */
export async function listCheckpoints(
  agent: Agent,
  checkpointer: BaseCheckpointSaver,
  threadId: string,
): Promise<CheckpointRow[]> {
  return (await readCheckpoints(agent, checkpointer, threadId)).map(({ row }) => row);
}

/** The checkpoints of a thread, oldest first, each with the state it holds. */
export async function readCheckpoints(
  agent: Agent,
  checkpointer: BaseCheckpointSaver,
  threadId: string,
): Promise<Array<{ row: CheckpointRow; values: Partial<AgentState> }>> {
  const config = { configurable: { thread_id: threadId } };
  const versionsSeen = new Map<string, Record<string, unknown>>();
  const parents = new Map<string, string | undefined>();
  for await (const tuple of checkpointer.list({ configurable: { thread_id: threadId, checkpoint_ns: "" } })) {
    const id = tuple.config.configurable?.checkpoint_id;
    if (typeof id !== "string") continue;
    versionsSeen.set(id, tuple.checkpoint.versions_seen);
    parents.set(id, tuple.parentConfig?.configurable?.checkpoint_id);
  }
  const snapshots: StateSnapshot[] = [];
  for await (const snapshot of agent.getStateHistory(config)) snapshots.push(snapshot);
  return snapshots.reverse().map((snapshot) => {
    const id = String(snapshot.config.configurable?.checkpoint_id);
    const parentId = parents.get(id);
    const values: Partial<AgentState> = snapshot.values;
    const row: CheckpointRow = {
      step: snapshot.metadata?.step ?? 0,
      node: nodeLabel(
        writersOf(versionsSeen.get(id) ?? {}, parentId ? versionsSeen.get(parentId) : undefined),
        snapshot.metadata?.source,
      ),
      attempt: values.attempt ?? 0,
      status: values.status ?? "running",
      next: [...snapshot.next],
      checkpointId: id,
      createdAt: snapshot.createdAt,
      awaitingApproval: snapshot.tasks.some((task) => task.interrupts.length > 0),
    };
    return { row, values };
  });
}

/** Plain left-aligned columns: easy to read, and to `grep`/`awk` in a script. */
export function formatCheckpoints(rows: CheckpointRow[]): string {
  return formatTable(
    ["step", "node", "attempt", "status", "next", "checkpoint"],
    rows.map((row) => [
      String(row.step),
      row.node,
      String(row.attempt),
      row.awaitingApproval ? "awaiting approval" : row.status,
      row.next.join(", ") || "-",
      row.checkpointId,
    ]),
  );
}

/** `selfheal history <thread>`: the thread's checkpoints, oldest first. */
export async function showHistory(threadId: string, flags: StoreFlags & { json?: boolean }): Promise<number> {
  return await withThreadStore(flags, threadId, async (store) => {
    const rows = await listCheckpoints(createAgent({ checkpointer: store.checkpointer }), store.checkpointer, threadId);
    if (rows.length === 0) throw noSuchRunError(threadId, store.location);
    process.stdout.write(flags.json ? `${JSON.stringify(rows, null, 2)}\n` : formatCheckpoints(rows));
    return EXIT.passed;
  });
}
