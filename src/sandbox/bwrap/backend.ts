import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { Socket } from "node:net";
import { relative } from "node:path";
import type { ForkServer } from "../fork/fork-server.js";
import { ForkedProcess } from "../fork/forked-process.js";
import { ForkServerSupervisor } from "../fork/supervisor.js";
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
import { interpreterCommand, pythonBootstrapSettings, type WarmStart } from "../host/command.js";
import { type Interpreter, InterpreterMissingError, resolveInterpreters } from "../host/interpreters.js";
import { RunCgroup } from "../host/run-cgroup.js";
import { trackRun } from "../host/run-reaper.js";
import { packageMount, SANDBOX_SUPPORT_DIR, SANDBOX_WORK_DIR, sandboxEnv } from "../host/system-view.js";
import { hostUids } from "../host/uids.js";
import { type RunDisk, WorkDir } from "../host/work-dir.js";
import { MAX_DISK_FILES, MIB, sameStartLimits } from "../limits.js";
import { EGRESS_MOUNT, type RunEgress } from "../run/egress.js";
import { endMarkFor } from "../run/end-report.js";
import type { Launcher, Reservation } from "../run/local-sandbox.js";
import { killProcessGroup, type LaunchedProgram, type RunWideLimits } from "../run/run-child.js";
import type { Containment, Language, RunResult, SandboxIsolation, SandboxLimits } from "../types.js";
import { RunsFolder, startBwrapForkServer } from "./fork-server-sandbox.js";
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
  /** The fork server pre-warmed Python runs come from, when asked for (see `forkServer`). */
  private readonly forks: ForkServerSupervisor | null;
  /** Its runs folder and uid, made with the first server and kept until close. */
  private forkHome: Promise<ForkHome> | null = null;
  private forkHomeReady: ForkHome | null = null;
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
      /**
       * Keep a fork server (src/sandbox/fork) for Python runs that need an interpreter soon: a run
       * that finds none waiting, and a pool's refill when runs come back to back. Off unless said.
       */
      forkServer?: boolean;
    },
  ) {
    this.parkSpare = options.parkSpare ?? true;
    this.forks = options.forkServer ? new ForkServerSupervisor(() => this.startForkServer()) : null;
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
    return { kind: "bwrap", memory, processes, cpu, disk, syscalls, notes, start: this.describeStart() };
  }

  private describeStart(): { forked: Language[]; by: string } {
    if (!this.forks) return { forked: [], by: "cold: each run starts its own interpreter (pre-warming is off)" };
    const givenUp = this.forks.givenUpBecause;
    if (givenUp !== null) return { forked: [], by: `cold: the fork server could not start (${givenUp})` };
    return {
      forked: ["python"],
      by:
        "a Python run that needs an interpreter soon (none is waiting for it, or runs come back to back) gets one forked from a fork server " +
        "(one interpreter started once, in a sandbox of the runs' shape), in its own namespaces, work dir, cgroup and seccomp filter; " +
        "a pool refilled between runs that come further apart starts its own (a started interpreter runs a short program ~3 ms sooner). " +
        "Forked runs share the server's uid: a run's process count is its pids cgroup's, and RLIMIT_NPROC, which would count every forked run's processes together, is set only where there are no cgroups. " +
        "JavaScript runs start their own Node: V8 cannot fork",
    };
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
      spawn: (language, warm, packagesDir, egress, mayFork) => {
        const { parked, fork } = resources;
        const python = interpreters.python;
        if (mayFork && fork?.server.alive && language === "python" && !packagesDir && !egress && python) {
          if (python.executable === fork.home.executable) {
            if (parked) void parked.discard();
            resources.parked = null;
            return this.spawnForked(fork, python, resources, warm);
          }
        }
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
    await this.forks?.close();
    await WorkDir.releaseIdleMounts();
    const home = await this.forkHome?.catch(() => null);
    this.forkHome = null;
    this.forkHomeReady = null;
    if (home) {
      await home.runs.remove();
      if (home.hostUid !== null) hostUids.release(home.hostUid);
    }
  }

  /** Starts the fork server, if runs are forked here, and waits until it runs (or could not start). */
  async prewarm(): Promise<void> {
    await this.forks?.ready();
  }

  /**
   * A uid, a cgroup and a mounted work dir for one run; all given back if any of them fails. While
   * a fork server runs, a run under the launcher's own limits gets its work dir in the server's
   * runs folder and the server's uid, so that it may be forked (or start cold as any run).
   */
  private async prepare(limits: SandboxLimits = this.limits): Promise<RunResources> {
    const fork = sameStartLimits(this.limits, limits) ? this.forkable() : null;
    const ownsUid = fork === null && this.isRoot;
    const hostUid = fork ? fork.home.hostUid : ownsUid ? hostUids.acquire() : null;
    let group: RunCgroup | null = null;
    try {
      group = this.cgroups.version === null ? null : RunCgroup.create(this.cgroups, limits);
      const owner = hostUid === null ? null : { uid: hostUid, gid: hostUid };
      const disk = this.disk ? { ...this.disk, bytes: limits.maxDiskMb * MIB } : null;
      const workDir = await WorkDir.create(owner, disk, fork?.home.runs.path ?? null);
      return { hostUid, ownsUid, group, workDir, limits, parked: null, released: false, fork };
    } catch (error) {
      if (hostUid !== null && ownsUid) hostUids.release(hostUid);
      await group?.remove();
      throw error;
    }
  }

  /** The running fork server and its home, or null (one is then started for the runs after). */
  private forkable(): RunFork | null {
    const server = this.forks?.current() ?? null;
    const home = this.forkHomeReady;
    return server && home ? { server, home } : null;
  }

  private async startForkServer(): Promise<ForkServer> {
    const interpreter = (await resolveInterpreters()).python;
    if (!interpreter) throw new InterpreterMissingError("python");
    this.forkHome ??= (async () => {
      const hostUid = this.isRoot ? hostUids.acquire() : null;
      try {
        return { runs: await RunsFolder.create(this.host, hostUid), hostUid, executable: interpreter.executable };
      } catch (error) {
        if (hostUid !== null) hostUids.release(hostUid);
        throw error;
      }
    })();
    const home = await this.forkHome.catch((error: unknown) => {
      this.forkHome = null;
      throw error;
    });
    this.forkHomeReady = home;
    return startBwrapForkServer(this.host, interpreter, home.runs, home.hostUid);
  }

  /** A Python run forked from the server, in the resources prepared for it. */
  private spawnForked(fork: RunFork, python: Interpreter, resources: RunResources, warm: WarmStart): LaunchedProgram {
    const { workDir, group, limits } = resources;
    const runsPath = fork.home.runs.path;
    const child = fork.server.fork(
      {
        dir: relative(runsPath, workDir.path),
        tmp: workDir.tmpPath === null ? null : relative(runsPath, workDir.tmpPath),
        tmpBytes: limits.maxDiskMb * MIB,
        // bwrap sets PWD for a cold run, from its --chdir.
        env: { ...sandboxEnv(python.prefixes), PWD: SANDBOX_WORK_DIR },
        // The server compiled the judge once, before the fork (server-source.ts).
        // Forked runs share the server's uid, so RLIMIT_NPROC would count every forked run's
        // processes together, and those of a run still on its way out: the run's pids cgroup
        // holds its own count where there is one.
        settings: pythonBootstrapSettings({
          limits,
          warm,
          judgeCompiled: true,
          supportDir: SANDBOX_SUPPORT_DIR,
          maxProcesses: group === null,
        }),
      },
      (pid) => group?.join(pid),
    );
    return this.launched(child, resources, "python", warm);
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
    }: { warm: WarmStart; packagesDir?: string | undefined; parked: boolean; egress?: RunEgress | undefined },
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
    const control = usesBootstrap(language, warm !== false);
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
    warm: WarmStart,
  ): LaunchedProgram {
    const endMark = endMarkFor(language, usesBootstrap(language, warm !== false));
    const setup = warm ? null : watchSetup(child);
    if (!warm) sendGo({ child, ...endMark });
    const killAll = (): void => {
      killProcessGroup(child);
      group?.killAll();
    };
    return {
      child,
      killAll,
      ...endMark,
      ...(setup ? { failedInSetup: setup } : {}),
      // A forked run's pid 1 reports the program's own status; bwrap's init encodes a signal in it.
      exitCodeEncodesSignal: !(child instanceof ForkedProcess),
      ...(group ? { runLimits: runWideLimits(group, limits) } : {}),
    };
  }
}

/**
 * For a cold run whose bootstrap says "r" before the program (Python's): whether bwrap failed
 * before that, with its own message, so that nothing of the program ran. Null where nothing tells.
 */
function watchSetup(child: ChildProcess): ((result: RunResult) => boolean) | null {
  const control = child.stdio[3];
  if (child instanceof ForkedProcess || !(control instanceof Socket)) return null;
  let ready = false;
  control.once("data", () => {
    ready = true;
  });
  return (result) => !ready && result.stdout === "" && result.stderr.startsWith("bwrap: ");
}

/** Where a launcher's forked runs live: the server's runs folder and uid, and its Python. */
interface ForkHome {
  runs: RunsFolder;
  hostUid: number | null;
  executable: string;
}

/** The fork server a run's resources were prepared for, and its home. */
interface RunFork {
  server: ForkServer;
  home: ForkHome;
}

/** What one run holds until it is released. */
interface RunResources {
  hostUid: number | null;
  /** Whether `hostUid` was taken for this run alone (else it is the fork server's). */
  ownsUid: boolean;
  /** Set where the run may be forked: its work dir is in the server's runs folder. */
  fork: RunFork | null;
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
    if (resources.hostUid !== null && resources.ownsUid) hostUids.release(resources.hostUid);
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
