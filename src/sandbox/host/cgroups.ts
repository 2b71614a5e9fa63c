import {
  accessSync,
  existsSync,
  constants as fsConstants,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  statfsSync,
  writeFileSync,
} from "node:fs";
import { rmdir } from "node:fs/promises";
import { join } from "node:path";

import { messageOf } from "../../core/errors.js";
import { identityIsAlive, ownIdentity } from "../../core/process.js";
import { MIB } from "../limits.js";
import type { SandboxLimits } from "../types.js";

/** `statfs(2)` f_type of a cgroup2 file system; a tmpfs there means v1 or hybrid. */
export const CGROUP2_SUPER_MAGIC = 0x63677270;
/** `selfheal-<owner pid>-<owner start time>-<n>`: the owner's identity survives the reuse of its pid. */
const RUN_CGROUP_NAME = /^selfheal-(\d+)-(\d+)-/;
/** The name before start times were recorded, `selfheal-<pid>-<n>`: judged by the pid alone. */
const LEGACY_RUN_CGROUP_NAME = /^selfheal-(\d+)-\d+$/;
/** How often a dead owner's group is emptied and retried before the sweep leaves it to the next one. */
const SWEEP_ATTEMPTS = 8;
/** rmdir answers EBUSY for a moment after the last process left: the kernel is still reaping. */
const REMOVE_RETRY_MS = [5, 10, 20, 50, 100, 200, 400, 800];

/**
 * Where this process can make a cgroup per run, and with which controllers. v1 needs a writable
 * dir in each hierarchy (memory, pids, cpuacct); v2 one delegated dir whose children get memory,
 * pids and cpu.
 */
export type CgroupSupport =
  | { version: 1; memory: string; pids: string; cpuacct: string | null }
  | { version: 2; parent: string }
  | { version: null; reason: string };

export interface CgroupHost {
  /** Where the cgroup file systems are mounted. */
  root: string;
  /** The text of /proc/self/cgroup. */
  selfCgroup: string;
  /** A delegated cgroup v2 dir to use instead of our own cgroup (SELFHEAL_CGROUP). */
  delegated: string | undefined;
  pid: number;
  /** statfs(2)'s f_type of `root`, when already known (tests describe a v2 host in a plain dir). */
  fsType?: number;
}

function realHost(): CgroupHost {
  let selfCgroup = "";
  try {
    selfCgroup = readFileSync("/proc/self/cgroup", "utf8");
  } catch {
    // Not Linux, or no /proc: nothing to find.
  }
  return { root: "/sys/fs/cgroup", selfCgroup, delegated: process.env.SELFHEAL_CGROUP || undefined, pid: process.pid };
}

let detected: CgroupSupport | undefined;

/** Finds, once per process, where run cgroups can go; see `CgroupSupport`. */
export function detectCgroups(host?: CgroupHost): CgroupSupport {
  if (host) return detect(host);
  detected ??= detect(realHost());
  return detected;
}

function detect(host: CgroupHost): CgroupSupport {
  if (process.platform !== "linux") return { version: null, reason: "cgroups exist only on Linux" };
  let type: number;
  try {
    type = host.fsType ?? statfsSync(host.root).type;
  } catch {
    return { version: null, reason: `${host.root} is not mounted` };
  }
  return type === CGROUP2_SUPER_MAGIC ? detectV2(host) : detectV1(host);
}

/** The path of this process in a v1 hierarchy (`N:memory:/path`) or in v2 (`0::/path`). */
export function ownCgroupPath(selfCgroup: string, controller: string | null): string | null {
  for (const line of selfCgroup.split("\n")) {
    const [, controllers = "", ...rest] = line.split(":");
    const path = rest.join(":");
    if (controller === null ? line.startsWith("0::") : controllers.split(",").includes(controller)) return path || "/";
  }
  return null;
}

/**
 * A reader of the CPU nanoseconds used so far by the cgroup another process is in (a container's
 * init, seen through `/proc/<pid>/cgroup`), or null where this host cannot read it: v1's cpuacct
 * (mounted as `cpuacct` or `cpu,cpuacct`) or v2's `cpu.stat`. The group's path must contain
 * `containerId` (docker's `/docker/<id>`, `docker-<id>.scope`, podman's `libpod-<id>.scope`), so a
 * pid an engine on another machine reported never picks an unrelated local process's group.
 */
export function cgroupCpuReader(
  pid: number,
  containerId: string,
  root = "/sys/fs/cgroup",
): (() => number | null) | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/cgroup`, "utf8");
  } catch {
    return null;
  }
  const v1 = ownCgroupPath(text, "cpuacct");
  if (containerId === "" || !(v1 ?? ownCgroupPath(text, null) ?? "").includes(containerId)) return null;
  const candidates =
    v1 === null
      ? [join(root, ownCgroupPath(text, null) ?? "/nonexistent", "cpu.stat")]
      : ["cpuacct", "cpu,cpuacct"].map((mount) => join(root, mount, v1, "cpuacct.usage"));
  const file = candidates.find((candidate) => existsSync(candidate));
  if (file === undefined) return null;
  return file.endsWith("cpu.stat")
    ? () => {
        const usec = readCounter(file, "usage_usec", -1);
        return usec < 0 ? null : usec * 1000;
      }
    : () => {
        try {
          return Number(readFileSync(file, "utf8").trim());
        } catch {
          return null;
        }
      };
}

function detectV1(host: CgroupHost): CgroupSupport {
  const place = (controller: string, file: string): string | { reason: string } => {
    const mount = join(host.root, controller);
    if (!existsSync(join(mount, file))) return { reason: `no cgroup v1 ${controller} hierarchy at ${mount}` };
    // Nested under our own cgroup, so whatever limit the host put on us still applies to the runs.
    const own = ownCgroupPath(host.selfCgroup, controller) ?? "/";
    const parent = join(mount, own);
    const problem = canCreateIn(parent);
    return problem ?? parent;
  };
  const memory = place("memory", "memory.limit_in_bytes");
  if (typeof memory !== "string") return { version: null, reason: memory.reason };
  const pids = place("pids", "cgroup.procs");
  if (typeof pids !== "string") return { version: null, reason: pids.reason };
  const cpuacct = place("cpuacct", "cpuacct.usage");
  return { version: 1, memory, pids, cpuacct: typeof cpuacct === "string" ? cpuacct : null };
}

function detectV2(host: CgroupHost): CgroupSupport {
  const own = ownCgroupPath(host.selfCgroup, null);
  const parent = host.delegated ?? (own === null ? null : join(host.root, own));
  if (parent === null) return { version: null, reason: "this process is in no cgroup v2 group" };
  const controllers = readWords(join(parent, "cgroup.controllers"));
  const missing = ["memory", "pids"].filter((name) => !controllers.includes(name));
  if (missing.length > 0) {
    return {
      version: null,
      reason: `cgroup v2 at ${parent} has no ${missing.join(" or ")} controller delegated to it (systemd: Delegate=yes, or SELFHEAL_CGROUP)`,
    };
  }
  const wanted = ["memory", "pids", ...(controllers.includes("cpu") ? ["cpu"] : [])];
  const enabled = readWords(join(parent, "cgroup.subtree_control"));
  if (wanted.some((name) => !enabled.includes(name))) {
    try {
      // Controllers can only be handed to children of a group with no processes of its own
      // ("no internal processes"), so when it is our own group we move into a leaf first.
      if (readWords(join(parent, "cgroup.procs")).length > 0) {
        const leaf = join(parent, "selfheal-host");
        mkdirSync(leaf, { recursive: true });
        writeFileSync(join(leaf, "cgroup.procs"), String(host.pid));
      }
      writeFileSync(join(parent, "cgroup.subtree_control"), wanted.map((name) => `+${name}`).join(" "));
    } catch (error) {
      return {
        version: null,
        reason: `cannot enable ${wanted.join(", ")} for children of ${parent}: ${messageOf(error)}`,
      };
    }
  }
  const problem = canCreateIn(parent);
  return problem ? { version: null, reason: problem.reason } : { version: 2, parent };
}

/** Makes and removes a probe group; also sweeps groups left by selfheal processes that died. */
function canCreateIn(parent: string): { reason: string } | null {
  try {
    accessSync(parent, fsConstants.W_OK);
    sweepDeadRunGroups(parent);
    const probe = join(parent, `${groupNamePrefix()}probe`);
    mkdirSync(probe);
    rmdirSync(probe);
    return null;
  } catch (error) {
    return { reason: `cannot create a cgroup in ${parent}: ${messageOf(error)}` };
  }
}

/**
 * Start-up reaping: the groups of selfheal processes that died without removing them (SIGKILL, a
 * crash) are emptied, whatever still runs in them is killed, and they are removed. A live owner's
 * groups, another selfheal process's runs, are left alone: its pid and start time still match.
 */
function sweepDeadRunGroups(parent: string): void {
  for (const entry of readdirSync(parent)) {
    const match = RUN_CGROUP_NAME.exec(entry);
    const legacy = LEGACY_RUN_CGROUP_NAME.exec(entry);
    if (!match && !legacy) continue;
    const owner = match
      ? { pid: Number(match[1]), startTime: Number(match[2]) }
      : { pid: Number(legacy?.[1]), startTime: null };
    if (owner.pid === process.pid || identityIsAlive(owner)) continue;
    const dir = join(parent, entry);
    for (let attempt = 0; attempt < SWEEP_ATTEMPTS; attempt++) {
      writeIfPresent(join(dir, "cgroup.kill"), "1");
      killListed(join(dir, "cgroup.procs"));
      try {
        rmdirSync(dir);
        break;
      } catch (error) {
        // EBUSY while the killed processes are reaped; anything else is not ours to fix.
        if ((error as NodeJS.ErrnoException).code !== "EBUSY") break;
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10 * (attempt + 1));
      }
    }
  }
}

let ownNamePrefix: string | undefined;

/** The start of every group name this process makes; see RUN_CGROUP_NAME. */
function groupNamePrefix(): string {
  ownNamePrefix ??= `selfheal-${process.pid}-${ownIdentity().startTime ?? 0}-`;
  return ownNamePrefix;
}

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

  private constructor(
    private readonly support: Exclude<CgroupSupport, { version: null }>,
    /** One dir per hierarchy (v1) or the one dir (v2). */
    private readonly dirs: string[],
  ) {}

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

  /** What kills the run's processes from outside this process (run-reaper.ts). */
  get killTargets(): { cgroupKillFiles?: string[]; cgroupProcsFiles?: string[] } {
    if (this.support.version === 2) return { cgroupKillFiles: [join(this.dirs[0] ?? "", "cgroup.kill")] };
    return { cgroupProcsFiles: [join(this.dirs[1] ?? "", "cgroup.procs")] };
  }

  /** True once the kernel's OOM killer has killed a process of this run for the memory limit. */
  memoryExceeded(): boolean {
    const events =
      this.support.version === 2
        ? join(this.dirs[0] ?? "", "memory.events")
        : join(this.dirs[0] ?? "", "memory.oom_control");
    return readCounter(events, "oom_kill") > 0;
  }

  /** Starts the CPU budget from now; what a pre-warmed interpreter used while loading is free. */
  startCpuBudget(): void {
    this.cpuBaselineNs = this.cpuUsedNs() ?? 0;
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

/** `key value` lines (memory.events, cpu.stat, v1's memory.oom_control): the value of `key`. */
function readCounter(file: string, key: string, missing = 0): number {
  try {
    for (const line of readFileSync(file, "utf8").split("\n")) {
      const [name, value] = line.trim().split(/\s+/);
      if (name === key) return Number(value);
    }
  } catch {
    // Already removed, or not this kernel's file.
  }
  return missing;
}

export function killListed(procsFile: string): void {
  for (const pid of readWords(procsFile)) {
    try {
      process.kill(Number(pid), "SIGKILL");
    } catch {
      // Exited meanwhile.
    }
  }
}

function readWords(file: string): string[] {
  try {
    return readFileSync(file, "utf8").split(/\s+/).filter(Boolean);
  } catch {
    return [];
  }
}

export function writeIfPresent(file: string, value: string): void {
  if (!existsSync(file)) return;
  try {
    writeFileSync(file, value);
  } catch {
    // A kernel without swap accounting refuses it; the memory limit itself still holds.
  }
}

function rmdirQuietly(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // Busy or gone; the next selfheal process sweeps it.
  }
}
