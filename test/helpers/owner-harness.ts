import type { ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

import {
  forkAndSleep,
  goneWithin as goneWithinFound,
  pidsWithMarker,
  startOwner as startOwnerCommand,
} from "../../src/testing/owner.js";

export { forkAndSleep, pidsWithMarker };

/**
 * Helpers for tests that need the selfheal host in a process of its own (test/helpers/sandbox-owner.ts),
 * so that it can be SIGKILLed mid-run or handed inherited descriptors.
 */
export const OWNER = fileURLToPath(new URL("./sandbox-owner.ts", import.meta.url));
export const REPO = fileURLToPath(new URL("../..", import.meta.url));

/** test/helpers/sandbox-owner.ts for one backend, as the conformance suite's `owner` option takes it. */
export function ownerCommand(kind: string) {
  return { command: process.execPath, args: ["--import", "tsx", OWNER, kind], cwd: REPO };
}

/** Starts a selfheal host in a child process running `code`, resolved once the program printed "started". */
export function startOwner(kind: string, language: "python" | "javascript", code: string): Promise<ChildProcess> {
  return startOwnerCommand(ownerCommand(kind), { language, code, timeoutMs: 60_000 });
}

/** Host processes that belong to the owner's run: the marker in argv, or a path of its run dirs (a fork server's included). */
export function leftovers(marker: string, ownerPid: number): number[] {
  const runDirs = [`selfheal-run-${ownerPid}-`, `selfheal-forks-${ownerPid}-`];
  return [...new Set([...pidsWithMarker(marker), ...runDirs.flatMap((dir) => pidsWithMarker(dir))])];
}

export function goneWithin(ms: number, marker: string, ownerPid: number): Promise<number[]> {
  return goneWithinFound(ms, () => leftovers(marker, ownerPid));
}
