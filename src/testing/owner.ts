import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";

import { pidsWithMarker } from "./processes.js";

/**
 * How to start a host of your sandbox in a process of its own, so the suite can SIGKILL it mid-run:
 * `command args... JSON`, the JSON being `{ language, code, timeoutMs }`. The host runs that one
 * program in your sandbox and writes each line the program prints to its stderr as it comes.
 */
export interface OwnerCommand {
  command: string;
  args: readonly string[];
  cwd?: string;
  /** Its environment; the suite's own when absent. */
  env?: NodeJS.ProcessEnv;
}

/** Starts the owner with `request` as its last argument; resolved once the program printed "started". */
export async function startOwner(owner: OwnerCommand, request: object): Promise<ChildProcess> {
  const child = spawn(owner.command, [...owner.args, JSON.stringify(request)], {
    ...(owner.cwd ? { cwd: owner.cwd } : {}),
    ...(owner.env ? { env: owner.env } : {}),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let seen = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the run never started: ${seen}`)), 30_000);
    child.stderr?.on("data", (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes("started")) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once("exit", () => reject(new Error(`the owner exited first: ${seen}`)));
  });
  return child;
}

/** The pids `find` returns once none is left but zombies, or what is left at the deadline. */
export function goneWithin(ms: number, find: () => number[]): Promise<number[]> {
  return livingOnceWithin(ms, find, (left) => left.length === 0);
}

/**
 * The living pids `find` returns once there is one: a process that escaped a run may still be
 * starting (forked, not yet exec'd) when the run ends. An empty list at the deadline.
 */
export function appearedWithin(ms: number, find: () => number[]): Promise<number[]> {
  return livingOnceWithin(ms, find, (found) => found.length > 0);
}

/** What `find` returns, zombies left out, once `settled` says so, or at the deadline. */
async function livingOnceWithin(
  ms: number,
  find: () => number[],
  settled: (pids: number[]) => boolean,
): Promise<number[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const living = find().filter((pid) => !isZombie(pid));
    if (settled(living) || Date.now() > deadline) return living;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function isZombie(pid: number): boolean {
  try {
    return /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return true;
  }
}

/**
 * A program that forks a child carrying the marker and sleeps; both stop by themselves after 60 s.
 * It prints "started" only once the child has exec'd (a close-on-exec pipe reads EOF; Node's
 * `spawn` event): before that the marker is in no command line, and a check would find nothing
 * left however the owner's death went.
 */
export function forkAndSleep(language: "python" | "javascript", marker: string): string {
  return language === "python"
    ? `import os, time\nr, w = os.pipe()\nif os.fork() == 0:\n    os.execv("/bin/sleep", ["sleep", "${marker}"])\nos.close(w)\nos.read(r, 1)\nprint("started", flush=True)\ntime.sleep(60)\n`
    : `const { spawn } = require("child_process");\nconst child = spawn("/bin/sleep", ["${marker}"], { stdio: "ignore" });\nchild.on("spawn", () => console.log("started"));\nsetTimeout(() => {}, 60000);\n`;
}

export { pidsWithMarker };
