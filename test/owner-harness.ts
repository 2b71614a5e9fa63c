import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import { pidsWithMarker } from "../src/testing/processes.js";

export { pidsWithMarker };

/**
 * Helpers for tests that need the selfheal host in a process of its own (test/sandbox-owner.ts),
 * so that it can be SIGKILLed mid-run or handed inherited descriptors.
 */
export const OWNER = fileURLToPath(new URL("./sandbox-owner.ts", import.meta.url));
export const REPO = fileURLToPath(new URL("..", import.meta.url));

/** Starts a selfheal host in a child process running `code`, resolved once the program printed "started". */
export async function startOwner(kind: string, language: "python" | "javascript", code: string): Promise<ChildProcess> {
  const owner = spawn(
    process.execPath,
    ["--import", "tsx", OWNER, JSON.stringify({ kind, language, code, timeoutMs: 60_000 })],
    {
      cwd: REPO,
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let seen = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the run never started: ${seen}`)), 30_000);
    owner.stderr?.on("data", (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes("started")) {
        clearTimeout(timer);
        resolve();
      }
    });
    owner.once("exit", () => reject(new Error(`the owner exited first: ${seen}`)));
  });
  return owner;
}

/** Host processes that belong to the owner's run: the marker in argv, or a path of its run dirs. */
export function leftovers(marker: string, ownerPid: number): number[] {
  return [...new Set([...pidsWithMarker(marker), ...pidsWithMarker(`selfheal-run-${ownerPid}-`)])];
}

export async function goneWithin(ms: number, marker: string, ownerPid: number): Promise<number[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const left = leftovers(marker, ownerPid).filter((pid) => !isZombie(pid));
    if (left.length === 0 || Date.now() > deadline) return left;
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

/** A program that forks a child carrying the marker and sleeps; both stop by themselves after 60 s. */
export function forkAndSleep(language: "python" | "javascript", marker: string): string {
  return language === "python"
    ? `import os, time\nif os.fork() == 0:\n    os.execv("/bin/sleep", ["sleep", "${marker}"])\nprint("started", flush=True)\ntime.sleep(60)\n`
    : `const { spawn } = require("child_process");\nspawn("/bin/sleep", ["${marker}"], { stdio: "ignore" });\nconsole.log("started");\nsetTimeout(() => {}, 60000);\n`;
}
