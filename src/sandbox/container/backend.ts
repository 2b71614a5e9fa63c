import type { ChildProcess } from "node:child_process";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { ARTIFACTS_FOLDER } from "../../core/data-files.js";
import { findTmpfsTools, probeTmpfs } from "../host/bwrap-probe.js";
import { findOnPath } from "../host/interpreters.js";
import { trackRun } from "../host/run-reaper.js";
import { seccompProfileFile } from "../host/seccomp.js";
import { type RunDisk, WorkDir } from "../host/work-dir.js";
import { limitsForRun, MIB, sameStartLimits } from "../limits.js";
import { CODE_FILE_NAME } from "../parse-error.js";
import { type RunEgress, SOCKET_EGRESS, withRunEgress } from "../run/egress.js";
import { type PrewarmMode, withArtifacts } from "../run/local-sandbox.js";
import {
  collectOptionsFor,
  collectRun,
  isAlive,
  killProcessGroup,
  unavailableResult,
  wholeRunMemoryNote,
} from "../run/run-child.js";
import type {
  Language,
  ManagedSandbox,
  RunHooks,
  RunRequest,
  RunResult,
  SandboxIsolation,
  SandboxLimits,
} from "../types.js";
import {
  buildContainerCommand,
  type ContainerEngine,
  type ContainerOptions,
  containerImageFor,
  diskShare,
  OWNER_LABEL,
  STDIN_FILE,
} from "./command.js";
import { containerCpuBudget } from "./cpu-budget.js";
import {
  containersLabelled,
  engineIsLocal,
  inspectContainer,
  probeContainerEngine,
  removeContainers,
} from "./engine.js";
import { encodeTar } from "./tar.js";

/** `docker run` and `podman run` exit with 125 when the engine itself failed, not the program. */
const ENGINE_FAILURE_EXIT_CODE = 125;
/** How long `prewarm()` waits for a container to come up, and how often it asks. */
const WARM_START_TIMEOUT_MS = 10_000;
const WARM_POLL_MS = 20;

/** A `docker run` client started for one language, its program not yet sent. */
interface StartedContainer {
  child: ChildProcess;
  name: string;
  /** The host tmpfs bound at /work/out (its `out/` folder), or null where out/ is not collected. */
  artifacts: WorkDir | null;
}

/**
 * Runs each program in a fresh container through the docker or podman CLI. Pre-warming starts the
 * next container (the engine's slow part: namespaces, cgroup, mounts) while nothing runs; it then
 * waits in `tar -x` for the program.
 */
export class ContainerSandbox implements ManagedSandbox {
  readonly kind = "container" as const;
  /** `--network none`: the run's proxy socket, bound in, is the container's one way out. */
  readonly egress = "enforced" as const;
  private readonly engine: ContainerEngine;
  private readonly owner = `${process.pid}-${randomBytes(6).toString("hex")}`;
  private engineReady = false;
  /** Forgets this sandbox's record for the process's watchdog (run-reaper.ts) once it is closed. */
  private forgetContainers: (() => void) | undefined;
  private readonly warm = new Map<Language, Promise<StartedContainer>>();
  /** The tmpfs out/ is bound from, or why out/ is not collected; found on first need. */
  private artifactsDisk: RunDisk | { reason: string } | undefined;
  /** Removals still running; `close()` waits for them. */
  private readonly removals = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly limits: SandboxLimits,
    private readonly options: ContainerOptions = {},
    private readonly prewarmMode: PrewarmMode = "after-first-use",
  ) {
    this.engine = options.command ?? "docker";
  }

  async run(request: RunRequest, hooks?: RunHooks): Promise<RunResult> {
    const startedAt = performance.now();
    const problem = await this.checkEngine();
    if (problem !== null) return unavailableResult(problem, startedAt);

    const limits = limitsForRun(this.limits, request);
    return withRunEgress(request.allowHosts ?? [], limits, SOCKET_EGRESS, startedAt, (egress) =>
      this.runIn(request, hooks, { startedAt, limits, egress }),
    );
  }

  private async runIn(
    request: RunRequest,
    hooks: RunHooks | undefined,
    { startedAt, limits, egress }: { startedAt: number; limits: SandboxLimits; egress: RunEgress | undefined },
  ): Promise<RunResult> {
    // A waiting container was started under the sandbox's own limits: a run asking others (more
    // memory, say) starts its own, and the waiting one stays for the next run it fits; so does a
    // run with network, whose container binds the run's own proxy.
    const fitsWarm = sameStartLimits(this.limits, limits) && !egress;
    const warm = fitsWarm ? await this.takeWarm(request.language) : undefined;
    const started = warm ?? (await this.start(request.language, limits, egress));
    // The wall clock is the program's: a container started for this run gets it once the engine
    // runs it, as a waiting one did (a busy engine took over 10 s to start one in CI).
    if (!warm) await this.waitUntilRunning(started);
    const files: Record<string, string> = {
      ...request.files,
      [CODE_FILE_NAME[request.language]]: request.code,
      [STDIN_FILE]: request.stdin ?? "",
    };
    let removal: Promise<void> | undefined;
    const killAll = (): void => {
      if (isAlive(started.child) && !removal) {
        removal = this.remove([started.name]);
      }
      killProcessGroup(started.child);
    };
    const cpuBudget = containerCpuBudget(this.engine, started, limits);
    const ran = await collectRun(
      { child: started.child, killAll, exitCodeEncodesSignal: true, ...(cpuBudget ? { runLimits: cpuBudget } : {}) },
      { ...collectOptionsFor(request, limits, startedAt, hooks), stdin: encodeTar(files, request.inputs) },
    );
    // The next container starts now, not during the run, where it would take CPU from the program.
    if (this.prewarmMode === "after-first-use") this.keepWarm(request.language);
    const state = removal
      ? null
      : await inspectContainer(this.engine, started.name, "{{.State.OOMKilled}} {{.State.Running}}");
    const oomKilled = state?.startsWith("true ") === true;
    const stopped = state?.endsWith(" false") === true;
    removal ??= this.remove([started.name]);
    // out/ is read once nothing of the run can change it under the walk: a container not known to
    // have stopped (we killed it, or its client died some other way) is removed first.
    if (started.artifacts && !stopped) await removal;
    const result = started.artifacts ? await withArtifacts(ran, started.artifacts, request) : ran;
    if (started.artifacts) this.track(started.artifacts.remove());
    if (result.exitCode === ENGINE_FAILURE_EXIT_CODE) {
      this.engineReady = false;
      return { ...result, status: "unavailable", error: undefined };
    }
    // The kernel's OOM kill prints nothing; the engine saw it in the container's memory cgroup.
    if (oomKilled) {
      return { ...result, status: "memory_limit", stderr: result.stderr + wholeRunMemoryNote(limits.memoryMb) };
    }
    return result;
  }

  /** What the flags of `buildContainerCommand` ask the engine for; test/sandbox/hostile-container.test.ts measures it. */
  describe(): SandboxIsolation {
    const { memoryMb, maxProcesses, cpuSeconds } = this.limits;
    const ownProfile = (this.options.seccomp ?? "selfheal") === "selfheal";
    const artifactsTmpfs = this.artifactsTmpfs();
    const collectsArtifacts = !("reason" in artifactsTmpfs);
    const share = diskShare(this.limits, collectsArtifacts);
    return {
      kind: "container",
      memory: {
        scope: "run",
        by: `${this.engine} --memory ${memoryMb}m (the container's cgroup); OOM-killed as \`memory_limit\``,
      },
      processes: { scope: "run", by: `${this.engine} --pids-limit ${maxProcesses}` },
      cpu: engineIsLocal(this.engine)
        ? {
            scope: "run",
            by: `the container's cgroup CPU time, read from this host every 100 ms: killed at ${cpuSeconds} s in all`,
          }
        : { scope: "process", by: `--ulimit cpu=${cpuSeconds} per process (the engine is not on this host)` },
      disk: {
        scope: "run",
        by: collectsArtifacts
          ? `tmpfs /work and /tmp, and a host tmpfs bound at /work/out, of ${share.mb} MiB and ${share.inodes} inodes each`
          : `tmpfs /work and /tmp of ${share.mb} MiB and ${share.inodes} inodes each`,
      },
      syscalls: ownProfile
        ? { scope: "run", by: "selfheal's seccomp deny-list as the container's profile" }
        : { scope: "process", by: `the engine's default seccomp profile (Docker 20.10's allows ptrace and io_uring)` },
      notes: [
        ...(engineIsLocal(this.engine)
          ? []
          : ["a remote engine's cgroups cannot be read from here, and --cpus only throttles, it never stops a run"]),
        ...("reason" in artifactsTmpfs ? [`artifacts: out/ is not collected: ${artifactsTmpfs.reason}`] : []),
        "installed packages (settings.packages) are not mounted: the cache is built for the host's interpreters, not the image's",
      ],
      start: {
        forked: [],
        by: "each run is a container of its own (one is started ahead of need): runs forked inside one long-lived container would share its cgroup, its limits and its file system",
      },
    };
  }

  /** Asks the engine whether it answers and finds the out/ tmpfs tools, without blocking the event loop. */
  async prepare(): Promise<void> {
    await this.checkEngine();
    await this.findArtifactsTmpfs();
  }

  /** Starts a container per language now; resolves once each waits for its program. */
  async prewarm(languages: readonly Language[] = ["python"]): Promise<void> {
    if (this.prewarmMode === "off" || (await this.checkEngine()) !== null) return;
    for (const language of languages) this.keepWarm(language);
    await Promise.all(
      languages.map(async (language) => {
        const container = await this.warm.get(language)?.catch(() => undefined);
        if (container) await this.waitUntilRunning(container);
      }),
    );
  }

  /** Removes the waiting containers and anything else this sandbox owns, and forgets its watchdog record. */
  async close(): Promise<void> {
    this.closed = true;
    const starting = [...this.warm.values()];
    this.warm.clear();
    const waiting = (await Promise.all(starting.map((entry) => entry.catch(() => undefined)))).filter(
      (container) => container !== undefined,
    );
    for (const container of waiting) killProcessGroup(container.child);
    this.discard(waiting);
    await Promise.all([...this.removals]);
    // A client killed just as it asked the engine for its container leaves one `rm -f` came too early for.
    if (this.forgetContainers) await this.removeOwned();
    // The emptied out/ tmpfs mounts work-dir.ts keeps for the next runs; a closed sandbox leaves none.
    if (this.artifactsDisk && !("reason" in this.artifactsDisk)) await WorkDir.releaseIdleMounts();
    this.forgetContainers?.();
    this.forgetContainers = undefined;
  }

  private keepWarm(language: Language): void {
    if (this.closed || this.warm.has(language)) return;
    const started = this.start(language);
    // A failed start (no tmpfs could be mounted) shows in the run that takes it, which starts anew.
    started.catch(() => undefined);
    this.warm.set(language, started);
  }

  /** A waiting container whose client is still alive (the engine may have refused it meanwhile). */
  private async takeWarm(language: Language): Promise<StartedContainer | undefined> {
    const entry = this.warm.get(language);
    this.warm.delete(language);
    const container = await entry?.catch(() => undefined);
    if (container && isAlive(container.child)) return container;
    if (container) this.discard([container]);
    return undefined;
  }

  /** Removes containers that ran no program, and their out/ tmpfs. */
  private discard(containers: StartedContainer[]): void {
    if (containers.length === 0) return;
    const removal = this.remove(containers.map((container) => container.name));
    for (const { artifacts } of containers) if (artifacts) this.track(removal.then(() => artifacts.remove()));
  }

  private async start(
    language: Language,
    limits: SandboxLimits = this.limits,
    egress?: RunEgress,
  ): Promise<StartedContainer> {
    // Removed by the process's watchdog should this process die before `close()`: the engine's
    // daemon owns the containers, so they would outlive their client.
    this.forgetContainers ??= trackRun({
      containers: { engine: findOnPath(this.engine) ?? this.engine, label: `${OWNER_LABEL}=${this.owner}` },
    });
    const name = `selfheal-${randomBytes(6).toString("hex")}`;
    const artifacts = await this.makeArtifactsTmpfs(limits);
    const seccompProfile = (this.options.seccomp ?? "selfheal") === "selfheal" ? seccompProfileFile() : null;
    const [file = "", ...args] = buildContainerCommand({
      engine: this.engine,
      image: this.imageFor(language),
      language,
      limits,
      name,
      owner: this.owner,
      seccompProfile,
      artifactsFolder: artifacts ? join(artifacts.path, ARTIFACTS_FOLDER) : null,
      ...(egress?.socketDir ? { egress: { dir: egress.socketDir, env: egress.env } } : {}),
    });
    // The engine CLI is ours, not the program's: it gets our environment (DOCKER_HOST and so on).
    const child = spawn(file, args, { detached: true, stdio: ["pipe", "pipe", "pipe"] });
    return { child, name, artifacts };
  }

  /**
   * Where the engine is on this host and we may mount (root), a tmpfs of its own for out/, bounded
   * in bytes and inodes, so what the program leaves there can be read after the run (`docker cp`
   * cannot read a stopped container's tmpfs) and it cannot fill the host's disk.
   */
  private async makeArtifactsTmpfs(limits: SandboxLimits): Promise<WorkDir | null> {
    const disk = await this.findArtifactsTmpfs();
    if ("reason" in disk) return null;
    const share = diskShare(limits, true);
    const artifacts = await WorkDir.create(null, { ...disk, bytes: share.mb * MIB, inodes: share.inodes });
    try {
      // Sticky and world-writable, as the container's /work: the program's uid is the engine's to map.
      await chmod(await artifacts.makeArtifactsFolder(), 0o1777);
      return artifacts;
    } catch (error) {
      await artifacts.remove();
      throw error;
    }
  }

  /** The out/ tmpfs as `prepare()` found it, or found now, blocking, for a `describe()` asked first. */
  private artifactsTmpfs(): RunDisk | { reason: string } {
    this.artifactsDisk ??= this.artifactsDiskFrom(
      engineIsLocal(this.engine) ? probeTmpfs(process.getuid?.() === 0, process.env.PATH ?? "") : null,
    );
    return this.artifactsDisk;
  }

  private async findArtifactsTmpfs(): Promise<RunDisk | { reason: string }> {
    if (this.artifactsDisk) return this.artifactsDisk;
    const tools = engineIsLocal(this.engine)
      ? await findTmpfsTools(process.getuid?.() === 0, process.env.PATH ?? "")
      : null;
    this.artifactsDisk ??= this.artifactsDiskFrom(tools);
    return this.artifactsDisk;
  }

  /** `tools` null: the engine is not on this host. */
  private artifactsDiskFrom(
    tools: { mount: string; umount: string } | { reason: string } | null,
  ): RunDisk | { reason: string } {
    if (tools === null) return { reason: "the engine is not on this host, where its bind mounts would come from" };
    const share = diskShare(this.limits, true);
    return "reason" in tools ? tools : { ...tools, bytes: share.mb * MIB, inodes: share.inodes };
  }

  /** Polls until the engine has the container running (waiting in `tar -x`), or its client gave up. */
  private async waitUntilRunning(container: StartedContainer): Promise<void> {
    const deadline = performance.now() + WARM_START_TIMEOUT_MS;
    while (performance.now() < deadline && container.child.exitCode === null) {
      if ((await inspectContainer(this.engine, container.name, "{{.State.Running}}")) === "true") return;
      await new Promise((resolve) => setTimeout(resolve, WARM_POLL_MS));
    }
  }

  /** `rm -f`, tracked so that `close()` returns only once they are gone. */
  private remove(names: string[]): Promise<void> {
    return this.track(removeContainers(this.engine, names));
  }

  /** Removes every container labelled with this sandbox's owner token, as the watchdog would. */
  private async removeOwned(): Promise<void> {
    const ids = await containersLabelled(this.engine, `${OWNER_LABEL}=${this.owner}`);
    if (ids.length > 0) await this.remove(ids);
  }

  private track(removal: Promise<void>): Promise<void> {
    const settled = removal.catch(() => undefined);
    this.removals.add(settled);
    void settled.then(() => this.removals.delete(settled));
    return settled;
  }

  private imageFor(language: Language): string {
    return containerImageFor(this.options.image, language);
  }

  private async checkEngine(): Promise<string | null> {
    if (this.engineReady) return null;
    const problem = await probeContainerEngine(this.engine);
    this.engineReady = problem === null;
    return problem;
  }
}
