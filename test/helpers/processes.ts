/** Processes of this host, read from /proc, for the tests that count what a sandbox leaves running. */
import { randomInt } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { statFields } from "../../src/core/process.js";

const MIB = 1024 * 1024;

/** The argument vector of a live process (a zombie's is empty), or null once it is gone. */
export function argvOf(pid: number): string[] | null {
  try {
    const raw = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    return raw === "" ? null : raw.split("\0").slice(0, -1);
  } catch {
    return null;
  }
}

export function parentOf(pid: number): number | null {
  const parent = statFields(pid)?.[1];
  return parent === undefined ? null : Number(parent);
}

/** The live processes whose parent is `parent`. */
export function childrenOf(parent: number): number[] {
  return readdirSync("/proc")
    .map(Number)
    .filter((pid) => Number.isInteger(pid) && parentOf(pid) === parent);
}

/** A deadline that bounds a hang, not a speed target: `probe` until it answers, then its answer. */
export async function eventually<T>(probe: () => T | null, what: string, deadlineMs = 30_000): Promise<T> {
  for (let waited = 0; waited < deadlineMs; waited += 20) {
    const answer = probe();
    if (answer !== null) return answer;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`gave up waiting for ${what}`);
}

/** A `maxFileMb` no other sandbox on this host uses, so its interpreters are ours to count. */
export function uniqueFileLimit(): { maxFileMb: number; marker: string } {
  const maxFileMb = randomInt(1_000, 60_000);
  return { maxFileMb, marker: `fsize=${maxFileMb * MIB}:${maxFileMb * MIB}` };
}
