import {
  accessSync,
  existsSync,
  constants as fsConstants,
  mkdirSync,
  readFileSync,
  rmdirSync,
  statfsSync,
  writeFileSync,
} from "node:fs";
import { readdir, rmdir } from "node:fs/promises";
import { join } from "node:path";

import { messageOf } from "../../core/errors.js";
import { identityIsAlive, ownIdentity } from "../../core/process.js";

let ownNamePrefix: string | undefined;

/** The start of every group name this process makes (RunCgroup's and the probe's); see RUN_CGROUP_NAME. */
export function groupNamePrefix(): string {
  ownNamePrefix ??= `selfheal-${process.pid}-${ownIdentity().startTime ?? 0}-`;
  return ownNamePrefix;
}

/** `statfs(2)` f_type of a cgroup2 file system; a tmpfs there means v1 or hybrid. */
export const CGROUP2_SUPER_MAGIC = 0x63677270;
/** `selfheal-<owner pid>-<owner start time>-<n>`: the owner's identity survives the reuse of its pid. */
const RUN_CGROUP_NAME = /^selfheal-(\d+)-(\d+)-/;
/** The name before start times were recorded, `selfheal-<pid>-<n>`: judged by the pid alone. */
const LEGACY_RUN_CGROUP_NAME = /^selfheal-(\d+)-\d+$/;
/** How often a dead owner's group is emptied and retried before the sweep leaves it to the next one. */
const SWEEP_ATTEMPTS = 8;

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

/**
 * What `detectCgroups` found, before anything was changed: for cgroup v2, `setup` lists what
 * `setUpCgroups` must still do (move this process into a leaf, enable controllers for children).
 */
export type CgroupDetection =
  | Exclude<CgroupSupport, { version: 2 }>
  | { version: 2; parent: string; setup?: { enable: string[]; leaf: { dir: string; pid: number } | null } };

/**
 * Finds where run cgroups can go, reading only: nothing on the host changes. `prepareCgroups`
 * goes on from here: it sets up what detection found missing and sweeps the groups dead owners left.
 */
export function detectCgroups(host: CgroupHost = realHost()): CgroupDetection {
  if (process.platform !== "linux") return { version: null, reason: "cgroups exist only on Linux" };
  let type: number;
  try {
    type = host.fsType ?? statfsSync(host.root).type;
  } catch {
    return { version: null, reason: `${host.root} is not mounted` };
  }
  return type === CGROUP2_SUPER_MAGIC ? detectV2(host) : detectV1(host);
}

/**
 * The host-changing step: moves this process into a leaf and enables the controllers detection
 * found missing (v2), then makes and removes a probe group in each place runs will use.
 */
export function setUpCgroups(detection: CgroupDetection): CgroupSupport {
  if (detection.version === null) return detection;
  if (detection.version === 2 && detection.setup) {
    const { parent, setup } = detection;
    try {
      // Controllers can only be handed to children of a group with no processes of its own
      // ("no internal processes"), so when it is our own group we move into a leaf first.
      if (setup.leaf) {
        mkdirSync(setup.leaf.dir, { recursive: true });
        writeFileSync(join(setup.leaf.dir, "cgroup.procs"), String(setup.leaf.pid));
      }
      writeFileSync(join(parent, "cgroup.subtree_control"), setup.enable.map((name) => `+${name}`).join(" "));
    } catch (error) {
      return {
        version: null,
        reason: `cannot enable ${setup.enable.join(", ")} for children of ${parent}: ${messageOf(error)}`,
      };
    }
  }
  if (detection.version === 2) {
    const problem = canCreateIn(detection.parent);
    return problem ? { version: null, reason: problem.reason } : { version: 2, parent: detection.parent };
  }
  const problem = canCreateIn(detection.memory) ?? canCreateIn(detection.pids);
  if (problem) return { version: null, reason: problem.reason };
  // CPU accounting is a bonus: without it the CPU limit holds per process.
  const cpuacct = detection.cpuacct !== null && canCreateIn(detection.cpuacct) === null ? detection.cpuacct : null;
  return { ...detection, cpuacct };
}

let prepared: CgroupSupport | undefined;
let preparing: Promise<CgroupSupport> | undefined;

/**
 * Detection, set-up and the sweep of dead owners' groups, once per process for the real host
 * (another `host` is a what-if question tests ask); never blocks the event loop for long: the
 * sweep waits for the kernel with timers.
 */
export function prepareCgroups(host?: CgroupHost): Promise<CgroupSupport> {
  const sweep = async (support: CgroupSupport): Promise<CgroupSupport> => {
    for (const parent of runParents(support)) await sweepDeadRunGroups(parent);
    return support;
  };
  if (host) return sweep(setUpCgroups(detectCgroups(host)));
  // Swept once even where `cgroupsNow` already answered a describe() without sweeping.
  preparing ??= sweep(cgroupsNow());
  return preparing;
}

/**
 * The support `prepareCgroups` finds, now, without the sweep: for a `describe()` asked before the
 * sandbox was prepared. The sweep is left to `prepareCgroups`, which the first run awaits.
 */
export function cgroupsNow(): CgroupSupport {
  prepared ??= setUpCgroups(detectCgroups());
  return prepared;
}

/** The dirs run groups are made in: one per v1 hierarchy, or the v2 parent. */
function runParents(support: CgroupSupport): string[] {
  if (support.version === null) return [];
  if (support.version === 2) return [support.parent];
  return [support.memory, support.pids, ...(support.cpuacct ? [support.cpuacct] : [])];
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

function detectV1(host: CgroupHost): CgroupDetection {
  const place = (controller: string, file: string): string | { reason: string } => {
    const mount = join(host.root, controller);
    if (!existsSync(join(mount, file))) return { reason: `no cgroup v1 ${controller} hierarchy at ${mount}` };
    // Nested under our own cgroup, so whatever limit the host put on us still applies to the runs.
    const own = ownCgroupPath(host.selfCgroup, controller) ?? "/";
    const parent = join(mount, own);
    return canWriteIn(parent) ?? parent;
  };
  const memory = place("memory", "memory.limit_in_bytes");
  if (typeof memory !== "string") return { version: null, reason: memory.reason };
  const pids = place("pids", "cgroup.procs");
  if (typeof pids !== "string") return { version: null, reason: pids.reason };
  const cpuacct = place("cpuacct", "cpuacct.usage");
  return { version: 1, memory, pids, cpuacct: typeof cpuacct === "string" ? cpuacct : null };
}

function detectV2(host: CgroupHost): CgroupDetection {
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
  const problem = canWriteIn(parent);
  if (problem) return { version: null, reason: problem.reason };
  const wanted = ["memory", "pids", ...(controllers.includes("cpu") ? ["cpu"] : [])];
  const enabled = readWords(join(parent, "cgroup.subtree_control"));
  if (wanted.every((name) => enabled.includes(name))) return { version: 2, parent };
  const busy = readWords(join(parent, "cgroup.procs")).length > 0;
  return {
    version: 2,
    parent,
    setup: { enable: wanted, leaf: busy ? { dir: join(parent, "selfheal-host"), pid: host.pid } : null },
  };
}

function canWriteIn(parent: string): { reason: string } | null {
  try {
    accessSync(parent, fsConstants.W_OK);
    return null;
  } catch (error) {
    return { reason: `cannot create a cgroup in ${parent}: ${messageOf(error)}` };
  }
}

/** Makes and removes a probe group. */
function canCreateIn(parent: string): { reason: string } | null {
  try {
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
export async function sweepDeadRunGroups(parent: string): Promise<void> {
  let entries: string[];
  try {
    entries = await readdir(parent);
  } catch {
    return;
  }
  for (const entry of entries) {
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
        await rmdir(dir);
        break;
      } catch (error) {
        // EBUSY while the killed processes are reaped; anything else is not ours to fix.
        if ((error as NodeJS.ErrnoException).code !== "EBUSY") break;
        await new Promise((resolve) => setTimeout(resolve, 10 * (attempt + 1)));
      }
    }
  }
}

/** `key value` lines (memory.events, cpu.stat, v1's memory.oom_control): the value of `key`. */
export function readCounter(file: string, key: string, missing = 0): number {
  try {
    return counterIn(readFileSync(file, "utf8"), key, missing);
  } catch {
    // Already removed, or not this kernel's file.
    return missing;
  }
}

/** The value of `key` in a cgroup file's "name value" lines. */
export function counterIn(text: string, key: string, missing = 0): number {
  for (const line of text.split("\n")) {
    const [name, value] = line.trim().split(/\s+/);
    if (name === key) return Number(value);
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

export function readWords(file: string): string[] {
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
