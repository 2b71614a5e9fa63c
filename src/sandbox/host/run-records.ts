import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

import { identityIsAlive, type ProcessIdentity, processStartTime } from "../../core/process.js";
import { killListed, writeIfPresent } from "./cgroups.js";

/**
 * The record of a selfheal process's live runs (see run-reaper.ts), as files in a dir of its own:
 * `owner` names the process (pid and start time), each `run-N` lists what kills one run, a line
 * each: `group <pgid> <leader start time>`, `kill <cgroup.kill file>`, `procs <cgroup.procs file>`,
 * `containers <engine> <label>` (a container sandbox's containers, left to the watchdog).
 * This side reads them, so the start-up sweep (temp-dirs.ts) can act on a dead process's record.
 */
export const OWNER_FILE = "owner";
const RUN_FILE = /^run-\d+$/;

/**
 * What kills one run from outside: its process group (the leader's start time makes the record
 * safe against pid reuse) and, where it has them, its cgroups: a v2 `cgroup.kill` or a v1
 * `cgroup.procs` to empty.
 */
export interface RunKillTargets {
  processGroup?: number;
  cgroupKillFiles?: string[];
  cgroupProcsFiles?: string[];
  /**
   * A container engine's containers carrying `label` (`name=value`): they belong to the engine's
   * daemon and outlive any process of ours, so only the watchdog, through the engine CLI, removes them.
   */
  containers?: { engine: string; label: string };
}

export function recordLines(targets: RunKillTargets): string[] {
  const lines: string[] = [];
  if (targets.processGroup !== undefined) {
    lines.push(`group ${targets.processGroup} ${processStartTime(targets.processGroup) ?? "-"}`);
  }
  for (const file of targets.cgroupKillFiles ?? []) lines.push(`kill ${file}`);
  for (const file of targets.cgroupProcsFiles ?? []) lines.push(`procs ${file}`);
  if (targets.containers) lines.push(`containers ${targets.containers.engine} ${targets.containers.label}`);
  return lines;
}

export function killTargets(targets: RunKillTargets): void {
  if (targets.processGroup !== undefined) signalQuietly(-targets.processGroup);
  for (const file of targets.cgroupKillFiles ?? []) writeIfPresent(file, "1");
  for (const file of targets.cgroupProcsFiles ?? []) killListed(file);
}

/**
 * Start-up reaping: the runs a dead selfheal process recorded (its watchdog died with it, or was
 * killed) are killed now. A process group is killed only while its leader is the very process that
 * was recorded, or gone with no successor under that pid; a live owner's dir is never passed here.
 */
export function reapRecordedRuns(dir: string): void {
  let entries: string[];
  try {
    entries = readdirSync(dir).filter((entry) => RUN_FILE.test(entry));
  } catch {
    return;
  }
  for (const entry of entries) {
    let text: string;
    try {
      text = readFileSync(join(dir, entry), "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n")) {
      const [kind, target = "", start] = line.split(" ");
      if (kind === "group") {
        const leader = Number(target);
        const now = processStartTime(leader);
        if (leader > 1 && (now === null || String(now) === start)) signalQuietly(-leader);
      } else if (kind === "kill") {
        writeIfPresent(target, "1");
      } else if (kind === "procs") {
        killListed(target);
      }
    }
  }
}

/** The owner a run registry dir records, or null when the dir is not one (or unreadable). */
export function registryOwner(dir: string): ProcessIdentity | null {
  try {
    const [pid, start] = readFileSync(join(dir, OWNER_FILE), "utf8").trim().split(" ");
    return { pid: Number(pid), startTime: start === "-" || start === undefined ? null : Number(start) };
  } catch {
    return null;
  }
}

/**
 * Whether the process that made this record is gone though its pid is taken: by start time. A
 * record without its owner file yet (just made) counts as live; a dead pid is the caller's check.
 */
export function recordOwnerIsReplaced(dir: string): boolean {
  const owner = registryOwner(dir);
  return owner !== null && !identityIsAlive(owner);
}

function signalQuietly(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // Gone already.
  }
}
