import { type ChildProcess, spawn } from "node:child_process";
import { randomInt } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { afterEach, describe, expect, it } from "vitest";

import { processStartTime } from "../../src/core/process.js";
import { FORK_SOCKET_NAME } from "../../src/sandbox/fork/fork-server.js";
import { FORK_RUNS_MOUNT } from "../../src/sandbox/fork/server-source.js";
import { cgroupsNow, prepareCgroups } from "../../src/sandbox/host/cgroups.js";
import { removeDeadProcessDirs } from "../../src/sandbox/host/temp-dirs.js";
import { bwrapMissing, cgroupsMissing, gvisorMissing } from "../helpers/capabilities.js";
import { forkAndSleep, goneWithin, leftovers, pidsWithMarker, startOwner } from "../helpers/owner-harness.js";
import { argvOf, parentOf } from "../helpers/processes.js";

/** The runs each case started, so whatever a failing case left behind is killed after it. */
const started: { marker: string; ownerPid: number }[] = [];
afterEach(() => {
  for (const { marker, ownerPid } of started.splice(0)) {
    for (const left of leftovers(marker, ownerPid)) {
      try {
        process.kill(left, "SIGKILL");
      } catch {
        // gone
      }
    }
  }
});

const backends: { kind: string; language: "python" | "javascript"; missing: string | null }[] = [
  { kind: "bwrap", language: "python", missing: bwrapMissing() },
  { kind: "bwrap", language: "javascript", missing: bwrapMissing() },
  // Forked from the fork server, which must die with the owner too.
  { kind: "bwrap-forked", language: "python", missing: bwrapMissing() },
  { kind: "process", language: "python", missing: null },
  { kind: "process", language: "javascript", missing: null },
  { kind: "gvisor", language: "python", missing: gvisorMissing() },
];

describe("a run dies with the selfheal process that owns it", () => {
  for (const { kind, language, missing } of backends) {
    it.skipIf(missing !== null)(
      `leaves no process of a ${language} run on ${kind} once its owner is SIGKILLed${missing ? ` (skipped: ${missing})` : ""}`,
      async () => {
        // Sleep seconds as a marker: unique, and harmless (60 s at most) should everything fail.
        const marker = `59.${randomInt(1_000_000, 9_999_999)}`;
        const owner = await startOwner(kind, language, forkAndSleep(language, marker));
        const ownerPid = owner.pid ?? 0;
        started.push({ marker, ownerPid });
        // "started" may come before the forked child has exec'd sleep: wait for it (on gVisor it is out of sight).
        const sleeping = () => pidsWithMarker(marker).filter((pid) => pid !== ownerPid);
        for (let waited = 0; kind !== "gvisor" && sleeping().length === 0 && waited < 15_000; waited += 50) {
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        if (kind !== "gvisor") expect(sleeping().length).toBeGreaterThan(0);
        if (kind === "bwrap-forked") {
          // The program that started sleep is a fork of the server: it has the server's command line.
          const program = parentOf(sleeping()[0] ?? 0);
          expect(argvOf(program ?? 0)).toContain(join(FORK_RUNS_MOUNT, FORK_SOCKET_NAME));
        }
        owner.kill("SIGKILL");
        // A deadline, not a speed target: on a loaded machine the watchdog and the kernel are slow.
        expect(await goneWithin(10_000, marker, ownerPid)).toEqual([]);
      },
    );
  }
});

describe("start-up reaping", () => {
  // The case makes cgroup v1 groups itself: root and the v1 hierarchies, found by capabilities.ts.
  const v1Missing =
    cgroupsMissing() ??
    (existsSync("/sys/fs/cgroup/pids/tasks") ? null : "no cgroup v1 pids hierarchy (cgroup v2 here)");

  it.skipIf(v1Missing !== null)(
    `kills what runs in a dead owner's cgroup and removes the group, but leaves a live owner's alone${v1Missing ? ` (skipped: ${v1Missing})` : ""}`,
    async () => {
      const cgroups = cgroupsNow();
      // This machine has cgroup v1 (above); a detection that finds none fails here.
      expect(cgroups.version).toBe(1);
      if (cgroups.version !== 1) throw new Error("unreachable: the version was asserted above");
      // A dead owner: a process that has exited (its pid and start time no longer match anything).
      const dead = spawn("true");
      await new Promise((resolve) => dead.once("exit", resolve));
      const deadGroup = join(cgroups.pids, `selfheal-${dead.pid}-1-1`);
      // Named as before start times were recorded: judged by its pid alone.
      const legacyGroup = join(cgroups.pids, `selfheal-${dead.pid}-7`);
      // A live owner: another process, running, under its real start time.
      const live = spawn("sleep", ["30"], { stdio: "ignore" });
      const liveGroup = join(cgroups.pids, `selfheal-${live.pid}-${processStartTime(live.pid ?? 0)}-1`);
      const deadRun = spawn("sleep", ["31"], { stdio: "ignore" });
      const legacyRun = spawn("sleep", ["35"], { stdio: "ignore" });
      const liveRun = spawn("sleep", ["32"], { stdio: "ignore" });
      try {
        for (const [group, run] of [
          [deadGroup, deadRun],
          [legacyGroup, legacyRun],
          [liveGroup, liveRun],
        ] as const) {
          mkdirSync(group);
          writeFileSync(join(group, "cgroup.procs"), String(run.pid));
        }
        const deadExit = new Promise((resolve) => deadRun.once("exit", (_code, signal) => resolve(signal)));
        const legacyExit = new Promise((resolve) => legacyRun.once("exit", (_code, signal) => resolve(signal)));
        // What a new selfheal process does before its first run: prepare, which sweeps.
        await prepareCgroups({
          root: "/sys/fs/cgroup",
          selfCgroup: readFileSync("/proc/self/cgroup", "utf8"),
          delegated: undefined,
          pid: process.pid,
        });
        expect(await deadExit).toBe("SIGKILL");
        expect(existsSync(deadGroup)).toBe(false);
        expect(await legacyExit).toBe("SIGKILL");
        expect(existsSync(legacyGroup)).toBe(false);
        expect(existsSync(liveGroup)).toBe(true);
        expect(liveRun.exitCode).toBeNull();
      } finally {
        const children = [live, deadRun, legacyRun, liveRun];
        for (const child of children) child.kill("SIGKILL");
        // A group can only be removed once its process is gone.
        await Promise.all(children.map(exited));
        for (const group of [deadGroup, legacyGroup, liveGroup]) {
          try {
            rmdirSync(group);
          } catch {
            // removed by the test's sweep
          }
        }
      }
    },
  );

  /**
   * The record a killed selfheal process leaves (run-records.ts) for one run still going: its owner
   * is a process that has already exited.
   */
  async function recordOfDeadOwner(runLine: string): Promise<string> {
    const dead = spawn("true");
    await new Promise((resolve) => dead.once("exit", resolve));
    const record = mkdtempSync(join(tmpdir(), `selfheal-runs-${dead.pid}-`));
    writeFileSync(join(record, "owner"), `${dead.pid} 1\n`);
    writeFileSync(join(record, "run-1"), `${runLine}\n`);
    return record;
  }

  it("kills the recorded process group of a dead owner whose watchdog died too, and removes the record", async () => {
    const run = spawn("sleep", ["33"], { stdio: "ignore", detached: true });
    const record = await recordOfDeadOwner(`group ${run.pid} ${processStartTime(run.pid ?? 0)}`);
    const exit = new Promise((resolve) => run.once("exit", (_code, signal) => resolve(signal)));
    try {
      await removeDeadProcessDirs();
      expect(await exit).toBe("SIGKILL");
      expect(readdirSync(tmpdir())).not.toContain(record.split("/").pop());
    } finally {
      run.kill("SIGKILL");
    }
  });

  it("leaves a recorded process group alone when its pid now names another process", async () => {
    const bystander = spawn("sleep", ["34"], { stdio: "ignore", detached: true });
    // A control the same sweep does kill: once it is dead, the sweep has judged the bystander too.
    const control = spawn("sleep", ["36"], { stdio: "ignore", detached: true });
    // Same pid, another start time: the recorded leader is gone and this is someone else.
    await recordOfDeadOwner(`group ${bystander.pid} 1`);
    await recordOfDeadOwner(`group ${control.pid} ${processStartTime(control.pid ?? 0)}`);
    try {
      await removeDeadProcessDirs();
      await exited(control);
      expect(control.signalCode).toBe("SIGKILL");
      expect(bystander.exitCode).toBeNull();
      expect(bystander.signalCode).toBeNull();
    } finally {
      bystander.kill("SIGKILL");
      control.kill("SIGKILL");
    }
  });
});

/** Resolves once the child has exited (at once if it already has). */
function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}
