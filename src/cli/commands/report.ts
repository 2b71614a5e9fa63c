import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { createAgent, describeStatus, type Settings } from "../../internal.js";
import { type RunTrace, renderRunReport, traceRun } from "../../report/index.js";
import type { RunStore } from "../../store/index.js";
import { noSuchRunError, type StoreFlags, withThreadStore } from "../session.js";
import { checkOutputFile, EXIT } from "../stream-run.js";
import { readCheckpoints } from "./history.js";

export interface ReportFlags extends StoreFlags {
  out?: string;
  open?: boolean;
}

/** The model names a run's settings name, each once. */
function modelsOf(settings: Settings | undefined): string[] {
  if (!settings) return [];
  const roles: Array<[string, string | null]> = [
    ["", settings.model],
    ["fixer ", settings.fixerModel],
    ["strong fixer ", settings.strongFixerModel],
    ["critic ", settings.criticModel],
  ];
  return roles.flatMap(([role, name]) => (name && (role === "" || name !== settings.model) ? [`${role}${name}`] : []));
}

/** A thread's run read from the store, checkpoint by checkpoint; undefined when the thread has none. */
export async function traceThread(store: RunStore, threadId: string): Promise<RunTrace | undefined> {
  const agent = createAgent({ checkpointer: store.checkpointer });
  const checkpoints = await readCheckpoints(agent, store.checkpointer, threadId);
  if (checkpoints.length === 0) return undefined;
  const graph = await agent.getGraphAsync({});
  const record = await store.getRun(threadId);
  return traceRun(
    checkpoints.map(({ row, values }) => ({
      values,
      node: row.node,
      ...(row.createdAt ? { createdAt: row.createdAt } : {}),
    })),
    {
      threadId,
      models: modelsOf(record?.settings),
      status: describeStatus(await agent.getState({ configurable: { thread_id: threadId } })),
      graph: {
        nodes: Object.keys(graph.nodes),
        edges: graph.edges.map((edge) => ({ source: edge.source, target: edge.target })),
      },
    },
  );
}

/** Writes the report of a thread to `out`; false when the store has no such thread. */
export async function writeRunReport(store: RunStore, threadId: string, out: string): Promise<boolean> {
  const trace = await traceThread(store, threadId);
  if (!trace) return false;
  await writeFile(out, renderRunReport(trace));
  return true;
}

/** `--report FILE` of a command that ran the thread: written however the run stopped (passed, failed, paused, Ctrl-C). */
export async function reportAtEnd(store: RunStore, threadId: string, out: string): Promise<void> {
  if (await writeRunReport(store, threadId, out)) process.stderr.write(`selfheal: wrote the run report to ${out}\n`);
}

/** How long a viewer that has not exited yet gets to fail before it counts as opened. */
const VIEWER_GRACE_MS = 3_000;

/**
 * Opens a file in the desktop's viewer, if there is one, or says why not (one line) instead of
 * failing the command that already wrote the file: a server or a container has no xdg-open, or no
 * display for it to open on (it then fails on its own, with nothing on the screen).
 */
export function openInViewer(
  path: string,
  platform: NodeJS.Platform = process.platform,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string | undefined> {
  const opener = platform === "darwin" ? "open" : platform === "win32" ? "explorer" : "xdg-open";
  if (opener === "xdg-open" && !env.DISPLAY && !env.WAYLAND_DISPLAY)
    return Promise.resolve(
      `cannot open it here: there is no display ($DISPLAY and $WAYLAND_DISPLAY are unset); open ${path} in a browser`,
    );
  return new Promise((resolve) => {
    const child = spawn(opener, [path], { stdio: "ignore", detached: true, env });
    child.once("error", (error: NodeJS.ErrnoException) =>
      resolve(error.code === "ENOENT" ? `cannot open it here: ${opener} is not installed` : error.message),
    );
    child.once("spawn", () => {
      const grace = setTimeout(() => resolve(undefined), VIEWER_GRACE_MS);
      child.once("exit", (code) => {
        clearTimeout(grace);
        // explorer.exe answers 1 even when it opened the file.
        resolve(
          code === 0 || opener === "explorer" ? undefined : `${opener} could not open ${path} (exit code ${code})`,
        );
      });
      child.unref();
    });
  });
}

/** `selfheal report <thread>`: writes the run's HTML report, and opens it when asked. */
export async function writeReportCommand(threadId: string, flags: ReportFlags): Promise<number> {
  const out = flags.out ?? `selfheal-report-${threadId.replace(/[^A-Za-z0-9_.-]+/g, "-")}.html`;
  checkOutputFile(out);
  return await withThreadStore(flags, threadId, async (store) => {
    if (!(await writeRunReport(store, threadId, out))) throw noSuchRunError(threadId, store.location);
    process.stderr.write(`selfheal: wrote the report of ${threadId} to ${out}\n`);
    if (flags.open) {
      const problem = await openInViewer(out);
      if (problem) process.stderr.write(`selfheal: ${problem}\n`);
    }
    return EXIT.passed;
  });
}
