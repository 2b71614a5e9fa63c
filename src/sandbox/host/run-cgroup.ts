import { closeSync, mkdirSync, openSync, readFileSync, readSync, rmdirSync, writeFileSync } from "node:fs";
import { rmdir } from "node:fs/promises";
import { join } from "node:path";

import { MIB } from "../limits.js";
import type { SandboxLimits } from "../types.js";
import { type CgroupSupport, counterIn, groupNamePrefix, killListed, readCounter, writeIfPresent } from "./cgroups.js";

/** memory.oom_control (v1) and memory.events (v2) are a few short lines. */
const OOM_EVENTS_BUFFER = Buffer.alloc(512);

/** rmdir answers EBUSY for a moment after the last process left: the kernel is still reaping. */
const REMOVE_RETRY_MS = [5, 10, 20, 50, 100, 200, 400, 800];

let runCounter = 0;
/** Groups not yet removed, so a process that exits mid-run leaves none behind. */
const liveGroups = new Set<RunCgroup>();
let exitHookInstalled = false;

/**
 * The cgroup(s) of one run: memory (with swap), process count and, where the controller exists,
 * CPU accounting, for the whole process tree. Created ahead of the run (at pre-warm time where
 * there is one: a fresh memory cgroup costs ~9 ms just before a run, nothing 300 ms ahead).
 */
export class RunCgroup {
  private removed = false;
  /** CPU time already used when the run proper started (a pre-warmed interpreter loading). */
  private cpuBaselineNs = 0;

  /**
   * The file that counts OOM kills, open from the start: read through an open descriptor it costs
   * a fraction of opening it at the run's end (~0.18 ms there, right after the run's wake-up), and
   * every run reads it before it returns. Closed before the groups go.
   */
  private oomEvents: number | null = null;

  private constructor(
    private readonly support: Exclude<CgroupSupport, { version: null }>,
    /** One dir per hierarchy (v1) or the one dir (v2). */
    private readonly dirs: string[],
  ) {
    try {
      this.oomEvents = openSync(this.oomEventsFile, "r");
    } catch {
      // Read by name instead.
    }
  }

  private get oomEventsFile(): string {
    return this.support.version === 2
      ? join(this.dirs[0] ?? "", "memory.events")
      : join(this.dirs[0] ?? "", "memory.oom_control");
  }

  static create(support: Exclude<CgroupSupport, { version: null }>, limits: SandboxLimits): RunCgroup {
    const name = `${groupNamePrefix()}${++runCounter}`;
    const memoryBytes = String(limits.memoryMb * MIB);
    const created: string[] = [];
    try {
      if (support.version === 2) {
        const dir = join(support.parent, name);
        mkdirSync(dir);
        created.push(dir);
        writeFileSync(join(dir, "memory.max"), memoryBytes);
        // Swap would let the run hold more than memory.max; a missing file means no swap support.
        writeIfPresent(join(dir, "memory.swap.max"), "0");
        writeFileSync(join(dir, "pids.max"), String(limits.maxProcesses));
      } else {
        const memory = join(support.memory, name);
        mkdirSync(memory);
        created.push(memory);
        writeFileSync(join(memory, "memory.limit_in_bytes"), memoryBytes);
        // memsw is memory plus swap; only there when the kernel accounts swap.
        writeIfPresent(join(memory, "memory.memsw.limit_in_bytes"), memoryBytes);
        const pids = join(support.pids, name);
        mkdirSync(pids);
        created.push(pids);
        writeFileSync(join(pids, "pids.max"), String(limits.maxProcesses));
        if (support.cpuacct) {
          const cpuacct = join(support.cpuacct, name);
          mkdirSync(cpuacct);
          created.push(cpuacct);
        }
      }
    } catch (error) {
      for (const dir of created.reverse()) rmdirQuietly(dir);
      throw error;
    }
    const group = new RunCgroup(support, created);
    liveGroups.add(group);
    installExitHook();
    return group;
  }

  /** The `cgroup.procs` files a process must write its pid into to join the run. */
  get procsFiles(): string[] {
    return this.dirs.map((dir) => join(dir, "cgroup.procs"));
  }

  /**
   * A prefix that puts the command in the run's groups before it starts, so not one fork escapes:
   * a shell writes its own pid (inherited by everything it execs and forks) and then execs.
   * Writing the child's pid from here after spawn would race with its first fork.
   */
  joinCommand(shell: string): string[] {
    const files = this.procsFiles;
    const script = `${files.map((_, index) => `echo $$ > "$${index + 1}"`).join(" && ")} && shift ${files.length} && exec "$@"`;
    return [shell, "-c", script, "sh", ...files];
  }

  /** Puts a process (and what it forks from now on) into the run's groups: a forked run's pid 1, before its program. */
  join(pid: number): void {
    for (const file of this.procsFiles) writeFileSync(file, String(pid));
  }

  /** What kills the run's processes from outside this process (run-reaper.ts). */
  get killTargets(): { cgroupKillFiles?: string[]; cgroupProcsFiles?: string[] } {
    if (this.support.version === 2) return { cgroupKillFiles: [join(this.dirs[0] ?? "", "cgroup.kill")] };
    return { cgroupProcsFiles: [join(this.dirs[1] ?? "", "cgroup.procs")] };
  }

  /** True once the kernel's OOM killer has killed a process of this run for the memory limit. */
  memoryExceeded(): boolean {
    if (this.oomEvents === null) return readCounter(this.oomEventsFile, "oom_kill") > 0;
    try {
      // A cgroup file is made afresh on each read from its start.
      const length = readSync(this.oomEvents, OOM_EVENTS_BUFFER, 0, OOM_EVENTS_BUFFER.length, 0);
      return counterIn(OOM_EVENTS_BUFFER.toString("latin1", 0, length), "oom_kill") > 0;
    } catch {
      return readCounter(this.oomEventsFile, "oom_kill") > 0;
    }
  }

  private closeOomEvents(): void {
    if (this.oomEvents === null) return;
    try {
      closeSync(this.oomEvents);
    } catch {
      // Already closed.
    }
    this.oomEvents = null;
  }

  /** Starts the CPU budget from now (what a pre-warmed interpreter used loading is free); false where nothing accounts it. */
  startCpuBudget(): boolean {
    const used = this.cpuUsedNs();
    this.cpuBaselineNs = used ?? 0;
    return used !== null;
  }

  /** CPU seconds the whole run used since `startCpuBudget`, or null where nothing accounts them. */
  cpuSecondsUsed(): number | null {
    const used = this.cpuUsedNs();
    return used === null ? null : (used - this.cpuBaselineNs) / 1e9;
  }

  private cpuUsedNs(): number | null {
    if (this.support.version === 2) {
      const usec = readCounter(join(this.dirs[0] ?? "", "cpu.stat"), "usage_usec", -1);
      return usec < 0 ? null : usec * 1000;
    }
    if (!this.support.cpuacct) return null;
    const dir = this.dirs[this.dirs.length - 1] ?? "";
    try {
      return Number(readFileSync(join(dir, "cpuacct.usage"), "utf8").trim());
    } catch {
      return null;
    }
  }

  /** Kills every process of the run (v2 has a switch for it; in v1 the pids group lists them). */
  killAll(): void {
    if (this.removed) return;
    if (this.support.version === 2) {
      writeIfPresent(join(this.dirs[0] ?? "", "cgroup.kill"), "1");
      return;
    }
    killListed(join(this.dirs[1] ?? "", "cgroup.procs"));
  }

  /** Removes the groups once their processes are gone, killing stragglers; retries while EBUSY. */
  async remove(): Promise<void> {
    if (this.removed) return;
    this.removed = true;
    this.closeOomEvents();
    liveGroups.delete(this);
    for (const dir of [...this.dirs].reverse()) {
      for (let attempt = 0; ; attempt++) {
        try {
          await rmdir(dir);
          break;
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code;
          if (code === "ENOENT") break;
          const wait = REMOVE_RETRY_MS[attempt];
          if (code !== "EBUSY" || wait === undefined) throw error;
          killListed(join(dir, "cgroup.procs"));
          await new Promise((resolve) => setTimeout(resolve, wait));
        }
      }
    }
  }

  /** Synchronous best effort for process exit: kill what is left and remove the dirs. */
  removeNow(): void {
    if (this.removed) return;
    this.killAll();
    this.removed = true;
    this.closeOomEvents();
    liveGroups.delete(this);
    for (const dir of [...this.dirs].reverse()) rmdirQuietly(dir);
  }
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const group of [...liveGroups]) group.removeNow();
  });
}

function rmdirQuietly(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // Busy or gone; the next selfheal process sweeps it.
  }
}
