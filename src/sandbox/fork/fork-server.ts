import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { createInterface } from "node:readline";

import { killProcessGroup, waitForExit } from "../run/run-child.js";
import { ForkedProcess, type ForkedStreams } from "./forked-process.js";

/** The server's socket, in the runs folder (hidden from every run by its own mount over it). */
export const FORK_SOCKET_NAME = ".fork-server.sock";
/** How long a server may take to say it is ready before it counts as failed. */
const START_TIMEOUT_MS = 30_000;

/** What a forked run needs that the server cannot know: where its files are and how it starts. */
export interface ForkRequest {
  /** The run's work dir, relative to the runs folder. */
  dir: string;
  /** Its /tmp, relative to the runs folder; without it the run gets a tmpfs of `tmpBytes`. */
  tmp: string | null;
  tmpBytes: number;
  /** The program's whole environment. */
  env: Record<string, string>;
  /** The Python bootstrap's settings: rlimits, the judge's file (`pythonBootstrapSettings`). */
  settings: string[];
}

/**
 * A running fork server (server-source.ts): a Python that has started once, in a sandbox of its
 * own, and makes each run's process by cloning itself into the run's namespaces. `fork` hands out
 * such a process; `join` puts it into the run's cgroups before its program may start.
 */
export class ForkServer {
  private closed = false;

  private constructor(
    private readonly child: ChildProcess,
    private readonly socketPath: string,
    /** The server's pid on the host, and how deep its pid namespace is in /proc's NSpid lines. */
    private readonly hostPid: number,
    private readonly namespaceLevel: number,
    private readonly forget: () => void,
  ) {
    child.once("exit", () => {
      this.closed = true;
      this.forget();
    });
  }

  /**
   * Starts the server from `child` (already spawned, the runs folder at `FORK_RUNS_MOUNT` inside)
   * and resolves once it listens; `forget` is called once it is gone.
   */
  static async start(child: ChildProcess, runsDir: string, forget: () => void): Promise<ForkServer> {
    try {
      const serverPid = await readyLine(child);
      if (child.pid === undefined) throw new Error("the fork server did not start");
      const found = findDescendant(child.pid, serverPid);
      if (!found) throw new Error("the fork server's process was not found under its sandbox");
      return new ForkServer(child, join(runsDir, FORK_SOCKET_NAME), found.pid, found.level, forget);
    } catch (error) {
      killProcessGroup(child);
      await waitForExit(child);
      forget();
      throw error;
    }
  }

  get alive(): boolean {
    return !this.closed && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Resolves when the server has exited (killed, crashed or closed). */
  whenGone(): Promise<void> {
    return waitForExit(this.child);
  }

  /**
   * A fresh process for one run. It waits, set up up to its program's first line, for its go on
   * fd 3, as a pre-warmed interpreter does; `join(pid)` runs first, with its pid on the host.
   */
  fork(request: ForkRequest, join: (pid: number) => void): ForkedProcess {
    const run = `${process.pid}-${++forkCounter}`;
    const open = (role: string, header: object = {}): Socket => {
      const socket = connect(this.socketPath);
      socket.write(`${JSON.stringify({ run, role, ...header })}\n`);
      return socket;
    };
    const streams: ForkedStreams = {
      stdin: open("in"),
      stdout: open("out"),
      stderr: open("err"),
      control: open("control"),
      status: open("status", request),
    };
    const forked = new ForkedProcess(streams);
    let reported = false;
    const lines = createInterface({ input: streams.status });
    // The connection's own error (a reset when the server dies) ends it as a close does.
    lines.on("error", () => undefined);
    lines.on("line", (line) => {
      const [kind, value = ""] = [line.slice(0, 1), line.slice(2)];
      if (kind === "p") {
        const found = findRunProcesses(this.hostPid, Number(value), this.namespaceLevel);
        if (typeof found === "string") {
          return forked.fail(new Error(`the forked run's processes were not found (${value}: ${found})`));
        }
        forked.setPid(found.init);
        try {
          join(found.init);
          join(found.program);
        } catch (error) {
          forked.kill();
          return forked.fail(error instanceof Error ? error : new Error(String(error)));
        }
        streams.status.write("c");
      } else if (kind === "x") {
        reported = true;
        forked.finish(Number(value));
      } else if (kind === "e") {
        forked.fail(new Error(`the fork server could not start the run: ${value}`));
      }
    });
    streams.status.once("close", () => {
      if (!reported) forked.finish(null);
    });
    return forked;
  }

  /** Stops the server; every run it forked dies with its namespace. */
  async close(): Promise<void> {
    this.closed = true;
    killProcessGroup(this.child);
    await waitForExit(this.child);
  }
}

let forkCounter = 0;

/** The server's first line on stdout, "ready PID" (its pid inside its sandbox). */
function readyLine(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    let errors = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      errors = `${errors}${chunk.toString()}`.slice(-2000);
    });
    const timer = setTimeout(() => reject(new Error("the fork server did not start in time")), START_TIMEOUT_MS);
    const fail = () => {
      clearTimeout(timer);
      reject(new Error(`the fork server exited before it was ready: ${errors.trim()}`));
    };
    child.once("exit", fail);
    child.once("error", fail);
    const lines = createInterface({ input: child.stdout ?? process.stdin });
    lines.once("line", (line) => {
      clearTimeout(timer);
      child.off("exit", fail);
      const match = /^ready (\d+)$/.exec(line);
      if (match) resolve(Number(match[1]));
      else reject(new Error(`the fork server said ${JSON.stringify(line)}`));
    });
  });
}

/** A process's pids, host's first, one per pid namespace it is in (/proc's NSpid line). */
function namespacePids(pid: number): number[] {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const line = /^NSpid:\s*(.*)$/m.exec(status)?.[1] ?? "";
    return line.trim().split(/\s+/).map(Number);
  } catch {
    return [];
  }
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** The process under `root` whose pid in its own namespace is `innerPid` (bwrap runs the server a few levels down). */
function findDescendant(root: number, innerPid: number): { pid: number; level: number } | null {
  const queue = [root];
  for (let pid = queue.shift(); pid !== undefined; pid = queue.shift()) {
    const pids = namespacePids(pid);
    if (pids.length > 1 && pids[pids.length - 1] === innerPid) return { pid, level: pids.length - 1 };
    queue.push(...childrenOf(pid));
  }
  return null;
}

/**
 * A run's pid 1 (the server's child whose pid in the server's namespace is `pid`) and its
 * program's process under it, by their pids on the host; else what was found. A children list
 * read while a child exits may omit the others (proc(5)), and an earlier run's pid 1 may be
 * exiting just then (the bench met it once): the lookup is tried again.
 */
function findRunProcesses(serverPid: number, pid: number, level: number): { init: number; program: number } | string {
  let found = "";
  for (let attempt = 0; attempt < 5; attempt++) {
    const init = findChild(serverPid, pid, level);
    const program = init === null ? [] : childrenOf(init);
    if (init !== null && program.length === 1 && program[0] !== undefined) return { init, program: program[0] };
    found = init === null ? "no pid 1" : `pid 1 ${init} with children [${program.join(", ")}]`;
  }
  return found;
}

/** The server's child whose pid in the server's namespace is `pid`, by its pid on the host. */
function findChild(serverPid: number, pid: number, level: number): number | null {
  for (const child of childrenOf(serverPid)) {
    const pids = namespacePids(child);
    if (pids[level] === pid) return pids[0] ?? null;
  }
  return null;
}
