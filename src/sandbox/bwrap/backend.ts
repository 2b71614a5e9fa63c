import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";

import {
  getSupportDir,
  inheritedFdsEnv,
  judgeNodeEnv,
  runExecutable,
  sendGo,
  usesBootstrap,
} from "../host/bootstrap.js";
import { BLOCK_FD, buildBwrapArgv, SECCOMP_FD } from "../host/bwrap-argv.js";
import type { BwrapHost } from "../host/bwrap-probe.js";
import type { CgroupSupport } from "../host/cgroups.js";
import { interpreterCommand } from "../host/command.js";
import { type Interpreter, InterpreterMissingError, resolveInterpreters } from "../host/interpreters.js";
import { RunCgroup } from "../host/run-cgroup.js";
import { trackRun } from "../host/run-reaper.js";
import { packageMount, SANDBOX_SUPPORT_DIR, sandboxEnv } from "../host/system-view.js";
import { hostUids } from "../host/uids.js";
import { type RunDisk, WorkDir } from "../host/work-dir.js";
import { MAX_DISK_FILES, MIB, sameStartLimits } from "../limits.js";
import { EGRESS_MOUNT, type RunEgress } from "../run/egress.js";
import { endMarkFor } from "../run/end-report.js";
import type { Launcher, Reservation } from "../run/local-sandbox.js";
import { killProcessGroup, type LaunchedProgram, type RunWideLimits } from "../run/run-child.js";
import type { Containment, Language, SandboxIsolation, SandboxLimits } from "../types.js";
import { ParkedSandbox } from "./parked.js";

let warnedWeakerLimits = false;

/** Printed once per process when a bwrap run's limits hold per process or per file only. */
function warnWeakerLimitsOnce(isolation: SandboxIsolation): void {
  const weak = (["memory", "processes", "cpu", "disk", "syscalls"] as const).filter(
    (name) => isolation[name].scope !== "run",
  );
  if (warnedWeakerLimits || weak.length === 0) return;
  warnedWeakerLimits = true;
  process.emitWarning(
    `selfheal's bwrap sandbox holds ${weak.join(", ")} per process (or not at all), not for the whole run: ${isolation.notes.join("; ")}. ` +
      "`selfheal doctor` shows what holds.",
    { type: "SelfhealSandboxWarning", code: "SELFHEAL_SANDBOX_LIMITS" },
  );
}

/** Runs each program in its own bubblewrap sandbox; see `buildBwrapArgv` for what it can see. */
export class BwrapLauncher implements Launcher {
  readonly kind = "bwrap" as const;
  // The sandbox has no network: the proxy's socket, bound in, is its one way out.
  readonly egress = { via: "socket", enforced: true, supportDir: SANDBOX_SUPPORT_DIR } as const;
  private readonly isRoot = process.getuid?.() === 0;
  private readonly cgroups: CgroupSupport;
  private readonly disk: RunDisk | null;
  /** The next run's resources and sandbox, prepared ahead of need (see `makeSpare`). */
  private spare: Promise<RunResources | null> | null = null;
  private readonly parkSpare: boolean;
  private closed = false;

  constructor(
    private readonly limits: SandboxLimits,
    private readonly host: BwrapHost,
    options: {
      /** Where the runs' cgroups go, as `prepareCgroups` found (or why there are none). */
      cgroups: CgroupSupport;
      /**
       * Make the spare's sandbox too, not only its cgroup and tmpfs (`ParkedSandbox`); on unless
       * said otherwise. With a warm pool the pool's interpreters are what is made ahead: a parked
       * sandbox beside them made pre-warmed runs 0.2-0.4 ms slower here, for a cold run the pool
       * rarely has.
       */
      parkSpare?: boolean;
    },
  ) {
    this.parkSpare = options.parkSpare ?? true;
    this.cgroups = host.shell ? options.cgroups : { version: null, reason: "no sh(1) to join the run's cgroup" };
    this.disk = "mount" in host.tmpfs ? { ...host.tmpfs, bytes: limits.maxDiskMb * MIB, inodes: MAX_DISK_FILES } : null;
    warnWeakerLimitsOnce(this.describe());
  }

  /** What holds each limit here, found when the launcher was made. */
  describe(): SandboxIsolation {
    const notes: string[] = [];
    const { memoryMb, maxProcesses, cpuSeconds, maxDiskMb, maxFileMb } = this.limits;
    let memory: Containment;
    let processes: Containment;
    let cpu: Containment;
    if (this.cgroups.version !== null) {
      const by = `cgroup v${this.cgroups.version}`;
      memory = {
        scope: "run",
        by: `${by}: ${memoryMb} MiB for the whole run, swap included; OOM-killed as \`memory_limit\``,
      };
      processes = {
        scope: "run",
        by: `${by}: pids.max ${maxProcesses}, plus RLIMIT_NPROC in the run's own user namespace`,
      };
      const accounted = this.cgroups.version === 2 || this.cgroups.cpuacct !== null;
      cpu = accounted
        ? { scope: "run", by: `${by}: ${cpuSeconds} CPU seconds for the whole run, then killed as \`timeout\`` }
        : { scope: "process", by: `RLIMIT_CPU ${cpuSeconds} s per process (no cpuacct hierarchy)` };
    } else {
      notes.push(`no cgroup: ${this.cgroups.reason}`);
      memory = { scope: "process", by: `RLIMIT_AS ${memoryMb} MiB per process` };
      processes = {
        scope: "run",
        by: `RLIMIT_NPROC ${maxProcesses} in the run's own user namespace${this.isRoot ? " and host uid" : ""}`,
      };
      cpu = { scope: "process", by: `RLIMIT_CPU ${cpuSeconds} s per process` };
    }
    let disk: Containment;
    if (this.disk) {
      disk = {
        scope: "run",
        by: `a tmpfs of ${maxDiskMb} MiB and ${MAX_DISK_FILES} inodes for /work and /tmp together`,
      };
    } else {
      notes.push(`no tmpfs work dir: ${"reason" in this.host.tmpfs ? this.host.tmpfs.reason : "unknown"}`);
      disk = {
        scope: "process",
        by: `RLIMIT_FSIZE ${maxFileMb} MiB per file in a host work dir; /tmp a tmpfs of ${maxDiskMb} MiB`,
      };
    }
    let syscalls: Containment;
    if (this.host.seccomp.usable) {
      syscalls = { scope: "run", by: `a seccomp deny-list built with libseccomp for ${this.host.seccomp.arch}` };
    } else {
      notes.push(`no seccomp filter: ${this.host.seccomp.reason}`);
      syscalls = { scope: "none", by: "no seccomp filter; namespaces and dropped capabilities only" };
    }
    return { kind: "bwrap", memory, processes, cpu, disk, syscalls, notes };
  }

  async reserve(python?: string, limits: SandboxLimits = this.limits): Promise<Reservation> {
    // The spare's cgroup and tmpfs were made for the launcher's own limits: a run asking others
    // prepares its own and leaves the spare for the next run it fits.
    const fitsSpare = sameStartLimits(this.limits, limits);
    const spare = fitsSpare ? this.spare : null;
    if (fitsSpare) this.spare = null;
    const resources = (await spare) ?? (await this.prepare(limits));
    const { workDir, group } = resources;
    const interpreters = await resolveInterpreters(python);
    const forgetRuns: (() => void)[] = [];
    return {
      workDir,
      spawn: (language, warm, packagesDir, egress) => {
        const { parked } = resources;
        resources.parked = null;
        if (!egress && parked?.fits(language, interpreters, packagesDir)) {
          const { child, forget } = parked.start();
          forgetRuns.push(forget);
          return this.launched(child, resources, language, warm);
        }
        if (parked) void parked.discard();
        const interpreter = interpreters[language];
        if (!interpreter) throw new InterpreterMissingError(language);
        const child = this.startSandbox(interpreter, resources, language, { warm, packagesDir, parked: false, egress });
        // Kills it should this process die mid-run: bwrap's --die-with-parent cannot, as root (run-reaper.ts).
        forgetRuns.push(trackRun({ processGroup: child.pid, ...group?.killTargets }));
        return this.launched(child, resources, language, warm);
      },
      release: async () => {
        await releaseResources(resources);
        for (const forget of forgetRuns.splice(0)) forget();
        this.makeSpare();
      },
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    const spare = await this.spare;
    this.spare = null;
    if (spare) await releaseResources(spare);
    await WorkDir.releaseIdleMounts();
  }

  /** A uid, a cgroup and a mounted work dir for one run; all given back if any of them fails. */
  private async prepare(limits: SandboxLimits = this.limits): Promise<RunResources> {
    const hostUid = this.isRoot ? hostUids.acquire() : null;
    let group: RunCgroup | null = null;
    try {
      group = this.cgroups.version === null ? null : RunCgroup.create(this.cgroups, limits);
      const owner = hostUid === null ? null : { uid: hostUid, gid: hostUid };
      const disk = this.disk ? { ...this.disk, bytes: limits.maxDiskMb * MIB } : null;
      const workDir = await WorkDir.create(owner, disk);
      return { hostUid, group, workDir, limits, parked: null, released: false };
    } catch (error) {
      if (hostUid !== null) hostUids.release(hostUid);
      await group?.remove();
      throw error;
    }
  }

  /**
   * Prepares the next run ahead of need: a memory cgroup made just before a run costs it ~9 ms, a
   * tmpfs mount a process start and the sandbox itself four more (`ParkedSandbox`). Made when a run
   * is over (while the model writes the next program, in an agent), they cost the next run nothing;
   * made while a run ran, on 2 CPUs, they slowed it. The pool's next interpreter takes it as well.
   */
  private makeSpare(): void {
    if (this.spare || this.closed) return;
    // A failure here is the next run's to report, when it prepares its own.
    const prepared = this.prepare();
    this.spare = (this.parkSpare ? prepared.then((resources) => this.park(resources)) : prepared).catch(() => null);
  }

  /** Makes a sandbox for the next Python run in the spare's resources; without one they serve as they are. */
  private async park(resources: RunResources): Promise<RunResources> {
    try {
      const interpreter = (await resolveInterpreters()).python;
      if (!interpreter || this.closed) return resources;
      const child = this.startSandbox(interpreter, resources, "python", { warm: false, parked: true });
      const forget = trackRun({ processGroup: child.pid, ...resources.group?.killTargets });
      resources.parked = new ParkedSandbox(child, interpreter.executable, forget);
    } catch {
      // The run that takes these resources starts its own sandbox, and reports what fails then.
    }
    return resources;
  }

  /** Starts bwrap for one run; `parked`, it makes the sandbox and waits on `BLOCK_FD` to start the program. */
  private startSandbox(
    interpreter: Interpreter,
    { workDir, hostUid, group, limits }: RunResources,
    language: Language,
    {
      warm,
      packagesDir,
      parked,
      egress,
    }: { warm: boolean; packagesDir?: string | undefined; parked: boolean; egress?: RunEgress | undefined },
  ): ChildProcess {
    const packages = packagesDir ? packageMount(language, packagesDir) : null;
    const command = interpreterCommand({
      language,
      executable: runExecutable(language, interpreter.executable, SANDBOX_SUPPORT_DIR),
      limits,
      warm,
      supportDir: SANDBOX_SUPPORT_DIR,
      prlimit: this.host.prlimit,
      // Inside its own user namespace the count is per sandbox, so the process cap is safe to set.
      maxProcesses: true,
      pythonPackagesDir: language === "python" ? packages?.at : null,
    });
    const control = usesBootstrap(language, warm);
    const ours = [
      0,
      1,
      2,
      ...(control ? [3] : []),
      ...(this.host.seccomp.usable ? [SECCOMP_FD] : []),
      ...(parked ? [BLOCK_FD] : []),
    ];
    const argv = buildBwrapArgv({
      host: this.host,
      hostUid,
      env: {
        ...sandboxEnv(interpreter.prefixes),
        ...inheritedFdsEnv(language, ours),
        ...judgeNodeEnv(language, interpreter.executable, SANDBOX_SUPPORT_DIR),
        ...egress?.env,
      },
      workDir: workDir.path,
      supportDir: getSupportDir(),
      prefixes: interpreter.prefixes,
      command,
      tmpfsBytes: limits.maxDiskMb * MIB,
      tmpDir: workDir.tmpPath,
      seccomp: this.host.seccomp.usable,
      parked,
      packages,
      ...(egress?.socketDir ? { egressDir: { dir: egress.socketDir, at: EGRESS_MOUNT } } : {}),
      ...(group && this.host.shell ? { cgroupJoin: group.joinCommand(this.host.shell) } : {}),
    });
    const [file = "", ...args] = argv;
    const filterFd = this.host.seccomp.usable ? openSync(this.host.seccomp.path, "r") : null;
    let child: ChildProcess;
    try {
      child = spawn(file, args, {
        env: {},
        // bwrap, its pid-namespace init and the program share this group; killing the group kills
        // the init, and the kernel then kills everything left in the namespace, setsid'd or not.
        detached: true,
        stdio: [
          "pipe",
          "pipe",
          "pipe",
          control ? "pipe" : "ignore",
          filterFd ?? "ignore",
          ...(parked ? ["pipe" as const] : []),
        ],
      });
    } finally {
      // The child has its own copy; bwrap reads it and closes it before the program starts.
      if (filterFd !== null) closeSync(filterFd);
    }
    return child;
  }

  /** The run's handle on a started sandbox; a cold one gets its go at once. */
  private launched(
    child: ChildProcess,
    { group, limits }: RunResources,
    language: Language,
    warm: boolean,
  ): LaunchedProgram {
    const endMark = endMarkFor(language);
    if (!warm) sendGo({ child, ...endMark });
    const killAll = (): void => {
      killProcessGroup(child);
      group?.killAll();
    };
    return {
      child,
      killAll,
      ...endMark,
      exitCodeEncodesSignal: true,
      ...(group ? { runLimits: runWideLimits(group, limits) } : {}),
    };
  }
}

/** What one run holds until it is released. */
interface RunResources {
  hostUid: number | null;
  group: RunCgroup | null;
  workDir: WorkDir;
  /** What the cgroup, the tmpfs and the program's rlimits were made for. */
  limits: SandboxLimits;
  /** The spare's sandbox, made ahead for a Python run, until a run takes it. */
  parked: ParkedSandbox | null;
  released: boolean;
}

async function releaseResources(resources: RunResources): Promise<void> {
  if (resources.released) return;
  resources.released = true;
  try {
    await resources.parked?.discard();
    resources.parked = null;
    await resources.workDir.remove();
  } finally {
    if (resources.hostUid !== null) hostUids.release(resources.hostUid);
    // After a timeout too: the group's last processes may still be dying, which remove() waits out.
    await resources.group?.remove();
  }
}

function runWideLimits(group: RunCgroup, limits: SandboxLimits): RunWideLimits {
  return {
    memoryMb: limits.memoryMb,
    cpuSeconds: limits.cpuSeconds,
    memoryExceeded: () => group.memoryExceeded(),
    startCpuBudget: () => group.startCpuBudget(),
    cpuSecondsUsed: () => group.cpuSecondsUsed(),
  };
}
