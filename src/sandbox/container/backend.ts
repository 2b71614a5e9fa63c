import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { ARTIFACTS_FOLDER } from "../../core/data-files.js";
import { probeTmpfs } from "../host/bwrap-probe.js";
import { cgroupCpuReader } from "../host/cgroups.js";
import { seccompProfileFile } from "../host/seccomp.js";
import { type RunDisk, safeRelativePath, WorkDir } from "../host/work-dir.js";
import type { ManagedSandbox } from "../index.js";
import { limitsForRun, MAX_DISK_FILES, MAX_OPEN_FILES, MIB, sameStartLimits } from "../limits.js";
import { CODE_FILE_NAME } from "../parse-error.js";
import { type PrewarmMode, withArtifacts } from "../run/local-sandbox.js";
import {
  collectRun,
  killProcessGroup,
  type RunWideLimits,
  unavailableResult,
  wholeRunMemoryNote,
} from "../run/run-child.js";
import type {
  InputFile,
  Language,
  RunHooks,
  RunRequest,
  RunResult,
  SandboxIsolation,
  SandboxLimits,
} from "../types.js";
import { startContainerReaper } from "./reaper.js";

/** How long we give the engine to answer before calling it unreachable. */
const ENGINE_CHECK_TIMEOUT_MS = 5_000;
/** `docker run` and `podman run` exit with 125 when the engine itself failed, not the program. */
const ENGINE_FAILURE_EXIT_CODE = 125;
/** How long `prewarm()` waits for a container to come up, and how often it asks. */
const WARM_START_TIMEOUT_MS = 10_000;
const WARM_POLL_MS = 20;
/** The label every container of ours carries; `docker ps -a --filter label=selfheal.sandbox` finds them. */
export const CONTAINER_LABEL = "selfheal.sandbox";
/** The label naming the sandbox instance that owns a container, which its reaper removes. */
export const OWNER_LABEL = "selfheal.owner";
/** Replaces the default images, for both languages, when the caller names none (CLI and graphs). */
export const CONTAINER_IMAGE_ENV = "SELFHEAL_CONTAINER_IMAGE";

export type ContainerEngine = "docker" | "podman";

export interface ContainerOptions {
  command?: ContainerEngine;
  /** One image for both languages, or one per language. Default: $SELFHEAL_CONTAINER_IMAGE, else the official images. */
  image?: string | Partial<Record<Language, string>>;
  /**
   * `selfheal` (default): the deny-list the bwrap backend uses (seccomp.ts) replaces the engine's
   * default profile, which in Docker 20.10 allows ptrace and io_uring. `engine`: keep the engine's own.
   */
  seccomp?: "selfheal" | "engine";
}

/** For registries: the official images. Offline, scripts/build-container-image.sh builds one for both. */
export const DEFAULT_CONTAINER_IMAGES: Record<Language, string> = {
  python: "python:3.12-slim",
  javascript: "node:20-slim",
};

/** Where the program's stdin waits inside the container until the shell hands it over. */
const STDIN_FILE = ".selfheal-stdin";

export interface ContainerCommandInput {
  engine: ContainerEngine;
  image: string;
  language: Language;
  limits: SandboxLimits;
  /** Container name, so a timed-out run can be removed by name (killing the client leaves it running). */
  name: string;
  /** The owning sandbox's token, for its reaper (see container-reaper.ts). */
  owner: string;
  /** The seccomp profile file to use instead of the engine's default; null keeps the engine's. */
  seccompProfile: string | null;
  /** Host dir (on a tmpfs of its own) bound at /work/out, from which the artifacts are collected; null for none. */
  artifactsFolder?: string | null;
}

/**
 * The `docker run` / `podman run` command line for one run. The code, extra files and stdin arrive
 * as a tar archive on the container's stdin, so nothing of the host is mounted. No `--rm`: the
 * container must outlive its program so that `inspect` can tell whether the kernel OOM-killed any of
 * its processes; the backend removes it then.
 */
export function buildContainerCommand(input: ContainerCommandInput): string[] {
  const { limits } = input;
  const codeFile = CODE_FILE_NAME[input.language];
  const interpreter =
    input.language === "python"
      ? `python3 -I -u ${codeFile}`
      : `node --max-old-space-size=${limits.memoryMb} ${codeFile}`;
  // `cd` rather than `--workdir /work`: with --workdir, Docker creates /work in the image before the
  // tmpfs is mounted there, and the tmpfs comes up root-owned 0755, unwritable for --user 65534
  // (moby/moby#39466). Unpack, hand the saved stdin to the program, and delete it so it cannot find it.
  const share = diskShare(limits, Boolean(input.artifactsFolder));
  const tmpfsOptions = `rw,nosuid,nodev,size=${share.mb}m,nr_inodes=${share.inodes},mode=1777`;
  const script = `cd /work && tar -x && exec 0< ${STDIN_FILE} && rm -f ${STDIN_FILE} && exec ${interpreter}`;
  return [
    input.engine,
    "run",
    "-i",
    "--name",
    input.name,
    "--network",
    "none",
    "--memory",
    `${limits.memoryMb}m`,
    "--memory-swap",
    `${limits.memoryMb}m`,
    "--pids-limit",
    String(limits.maxProcesses),
    "--read-only",
    "--cap-drop",
    "ALL",
    "--security-opt",
    "no-new-privileges",
    ...(input.seccompProfile === null ? [] : ["--security-opt", `seccomp=${input.seccompProfile}`]),
    "--user",
    "65534:65534",
    "--tmpfs",
    `/work:${tmpfsOptions}`,
    "--tmpfs",
    `/tmp:${tmpfsOptions}`,
    ...(input.artifactsFolder
      ? ["--mount", `type=bind,src=${input.artifactsFolder},dst=/work/${ARTIFACTS_FOLDER}`]
      : []),
    "--env",
    "HOME=/work",
    "--ulimit",
    `cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`,
    "--ulimit",
    `fsize=${limits.maxFileMb * MIB}:${limits.maxFileMb * MIB}`,
    "--ulimit",
    `nofile=${MAX_OPEN_FILES}:${MAX_OPEN_FILES}`,
    "--label",
    `${CONTAINER_LABEL}=1`,
    "--label",
    `${OWNER_LABEL}=${input.owner}`,
    input.image,
    "sh",
    "-c",
    script,
  ];
}

/**
 * /work and /tmp are two tmpfs mounts (an engine mounts no tmpfs twice), and out/, where it is
 * collected, a host tmpfs of a third: each gets an equal share of the disk budget and its inodes.
 */
function diskShare(limits: SandboxLimits, withArtifacts: boolean): { mb: number; inodes: number } {
  const parts = withArtifacts ? 3 : 2;
  return { mb: Math.max(1, Math.floor(limits.maxDiskMb / parts)), inodes: Math.floor(MAX_DISK_FILES / parts) };
}

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
  private readonly engine: ContainerEngine;
  private readonly owner = `${process.pid}-${randomBytes(6).toString("hex")}`;
  private engineReady = false;
  private reaper: { release(): void } | undefined;
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
    // A waiting container was started under the sandbox's own limits: a run asking others (more
    // memory, say) starts its own, and the waiting one stays for the next run it fits.
    const fitsWarm = sameStartLimits(this.limits, limits);
    const started =
      (fitsWarm ? await this.takeWarm(request.language) : undefined) ?? (await this.start(request.language, limits));
    const files: Record<string, string> = {
      ...request.files,
      [CODE_FILE_NAME[request.language]]: request.code,
      [STDIN_FILE]: request.stdin ?? "",
    };
    let removal: Promise<void> | undefined;
    const killAll = (): void => {
      if (started.child.exitCode === null && started.child.signalCode === null && !removal) {
        removal = this.remove([started.name]);
      }
      killProcessGroup(started.child);
    };
    const cpuBudget = this.cpuBudget(started, limits);
    const ran = await collectRun(
      { child: started.child, killAll, exitCodeEncodesSignal: true, ...(cpuBudget ? { runLimits: cpuBudget } : {}) },
      {
        language: request.language,
        stdin: encodeTar(files, request.inputs),
        timeoutMs: limits.timeoutMs,
        maxOutputBytes: limits.maxOutputBytes,
        ...(hooks ? { hooks } : {}),
        startedAt,
      },
    );
    // The next container starts now, not during the run, where it would take CPU from the program.
    if (this.prewarmMode === "after-first-use") this.keepWarm(request.language);
    const state = removal ? null : await this.inspect(started.name, "{{.State.OOMKilled}} {{.State.Running}}");
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

  /** What the flags of `buildContainerCommand` ask the engine for; test/hostile-container.test.ts measures it. */
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
      cpu: this.engineIsLocal()
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
        ...(this.engineIsLocal()
          ? []
          : ["a remote engine's cgroups cannot be read from here, and --cpus only throttles, it never stops a run"]),
        ...("reason" in artifactsTmpfs ? [`artifacts: out/ is not collected: ${artifactsTmpfs.reason}`] : []),
        "installed packages (settings.packages) are not mounted: the cache is built for the host's interpreters, not the image's",
      ],
    };
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

  /** Removes the waiting containers and releases the reaper (which sweeps anything left). */
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
    if (this.reaper) await this.removeOwned();
    // The emptied out/ tmpfs mounts work-dir.ts keeps for the next runs; a closed sandbox leaves none.
    if (this.artifactsDisk && !("reason" in this.artifactsDisk)) await WorkDir.releaseIdleMounts();
    this.reaper?.release();
    this.reaper = undefined;
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
    if (container && container.child.exitCode === null && container.child.signalCode === null) return container;
    if (container) this.discard([container]);
    return undefined;
  }

  /** Removes containers that ran no program, and their out/ tmpfs. */
  private discard(containers: StartedContainer[]): void {
    if (containers.length === 0) return;
    const removal = this.remove(containers.map((container) => container.name));
    for (const { artifacts } of containers) if (artifacts) this.track(removal.then(() => artifacts.remove()));
  }

  private async start(language: Language, limits: SandboxLimits = this.limits): Promise<StartedContainer> {
    this.reaper ??= startContainerReaper(this.engine, `${OWNER_LABEL}=${this.owner}`);
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
    const disk = this.artifactsTmpfs();
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

  private artifactsTmpfs(): RunDisk | { reason: string } {
    if (this.artifactsDisk) return this.artifactsDisk;
    if (!this.engineIsLocal()) {
      this.artifactsDisk = { reason: "the engine is not on this host, where its bind mounts would come from" };
      return this.artifactsDisk;
    }
    const tools = probeTmpfs(process.getuid?.() === 0, process.env.PATH ?? "");
    const share = diskShare(this.limits, true);
    this.artifactsDisk = "reason" in tools ? tools : { ...tools, bytes: share.mb * MIB, inodes: share.inodes };
    return this.artifactsDisk;
  }

  /**
   * The CPU budget for the whole container, as bwrap's cgroup gives it: `collectRun` polls the
   * container's cgroup (found through its init's pid as soon as the engine reports one) and kills
   * the run past `cpuSeconds`. Memory stays the engine's: its OOM kill is read after the exit.
   */
  private cpuBudget(started: StartedContainer, limits: SandboxLimits): RunWideLimits | undefined {
    if (!this.engineIsLocal()) return undefined;
    let readNs: (() => number | null) | null = null;
    const running = (): boolean => started.child.exitCode === null && started.child.signalCode === null;
    void (async () => {
      while (readNs === null && running()) {
        const [pid = 0, id = ""] = (await this.inspect(started.name, "{{.State.Pid}} {{.Id}}"))?.split(" ") ?? [];
        if (Number(pid) > 0) readNs = cgroupCpuReader(Number(pid), id) ?? (() => null);
        else await new Promise((resolve) => setTimeout(resolve, WARM_POLL_MS));
      }
    })();
    const { memoryMb, cpuSeconds } = limits;
    return {
      memoryMb,
      cpuSeconds,
      memoryExceeded: () => false,
      // The container is fresh (or waited idle in `tar -x`): all it used is the run's.
      startCpuBudget: () => undefined,
      cpuSecondsUsed: () => (readNs?.() ?? 0) / 1e9,
    };
  }

  /** Whether the engine's containers live on this machine, so their cgroups can be read here. */
  private engineIsLocal(): boolean {
    const host = this.engine === "docker" ? process.env.DOCKER_HOST : process.env.CONTAINER_HOST;
    return process.platform === "linux" && (!host || host.startsWith("unix://"));
  }

  /** The container's `inspect --format template`; null when the engine cannot say. */
  private inspect(name: string, template: string): Promise<string | null> {
    return new Promise((resolve) => {
      execFile(
        this.engine,
        ["inspect", "--format", template, name],
        { timeout: ENGINE_CHECK_TIMEOUT_MS },
        (error, stdout) => resolve(error ? null : stdout.trim()),
      );
    });
  }

  /** Polls until the engine has the container running (waiting in `tar -x`), or its client gave up. */
  private async waitUntilRunning(container: StartedContainer): Promise<void> {
    const deadline = performance.now() + WARM_START_TIMEOUT_MS;
    while (performance.now() < deadline && container.child.exitCode === null) {
      if ((await this.inspect(container.name, "{{.State.Running}}")) === "true") return;
      await new Promise((resolve) => setTimeout(resolve, WARM_POLL_MS));
    }
  }

  /** `rm -f` kills and removes at once; tracked so that `close()` returns only once they are gone. */
  private remove(names: string[]): Promise<void> {
    return this.track(
      new Promise<void>((resolve) => {
        execFile(this.engine, ["rm", "-f", ...names], { timeout: 30_000 }, () => resolve());
      }),
    );
  }

  /** Removes every container labelled with this sandbox's owner token, as the reaper does. */
  private removeOwned(): Promise<void> {
    return new Promise((resolve) => {
      execFile(
        this.engine,
        ["ps", "-aq", "--filter", `label=${OWNER_LABEL}=${this.owner}`],
        { timeout: ENGINE_CHECK_TIMEOUT_MS },
        (error, stdout) => {
          const ids = error ? [] : stdout.split(/\s+/).filter(Boolean);
          if (ids.length === 0) resolve();
          else void this.remove(ids).then(resolve);
        },
      );
    });
  }

  private track(removal: Promise<void>): Promise<void> {
    const settled = removal.catch(() => undefined);
    this.removals.add(settled);
    void settled.then(() => this.removals.delete(settled));
    return settled;
  }

  private imageFor(language: Language): string {
    const { image } = this.options;
    if (typeof image === "string") return image;
    return image?.[language] ?? (process.env[CONTAINER_IMAGE_ENV] || DEFAULT_CONTAINER_IMAGES[language]);
  }

  private async checkEngine(): Promise<string | null> {
    if (this.engineReady) return null;
    const problem = await probeContainerEngine(this.engine);
    this.engineReady = problem === null;
    return problem;
  }
}

/**
 * Asks the engine for its server version: null when it answers, else why not in the engine's own
 * words (the CLI talks to the daemon DOCKER_HOST / CONTAINER_HOST name, so a missing socket shows here).
 */
export function probeContainerEngine(engine: ContainerEngine): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(
      engine,
      ["version", "--format", "{{.Server.Version}}"],
      { timeout: ENGINE_CHECK_TIMEOUT_MS },
      (error, _stdout, stderr) => {
        if (!error) resolve(null);
        else if (error.code === "ENOENT") resolve(`${engine} is not installed (not found on PATH)`);
        else if (error.killed) resolve(`${engine} did not answer within ${ENGINE_CHECK_TIMEOUT_MS / 1000} s`);
        else resolve(stderr.trim() || error.message);
      },
    );
  });
}

/**
 * A minimal ustar archive of regular files; enough for `tar -x` in any image. The read-only files
 * (inputs, mode 0444) come first, so the code, written last, wins a clash as on the local backends.
 */
export function encodeTar(files: Record<string, string>, readOnly: readonly InputFile[] = []): Buffer {
  const blocks: Buffer[] = [];
  const entries = [
    ...readOnly.map((input) => ({ rawName: input.name, body: Buffer.from(input.content), mode: "0000444" })),
    ...Object.entries(files).map(([rawName, content]) => ({
      rawName,
      body: Buffer.from(content, "utf8"),
      mode: "0000644",
    })),
  ];
  for (const { rawName, body, mode } of entries) {
    const name = safeRelativePath(rawName);
    if (Buffer.byteLength(name) > 100) throw new Error(`file name too long for the container sandbox: ${name}`);
    const header = Buffer.alloc(512);
    header.write(name, 0, 100, "utf8");
    header.write(`${mode}\0`, 100, "ascii");
    header.write("0000000\0", 108, "ascii");
    header.write("0000000\0", 116, "ascii");
    header.write(`${body.length.toString(8).padStart(11, "0")}\0`, 124, "ascii");
    header.write(
      `${Math.floor(Date.now() / 1000)
        .toString(8)
        .padStart(11, "0")}\0`,
      136,
      "ascii",
    );
    header.write("        ", 148, "ascii");
    header.write("0", 156, "ascii");
    header.write("ustar\0", 257, "ascii");
    header.write("00", 263, "ascii");
    let checksum = 0;
    for (const byte of header) checksum += byte;
    header.write(`${checksum.toString(8).padStart(6, "0")}\0 `, 148, "ascii");
    blocks.push(header, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}
