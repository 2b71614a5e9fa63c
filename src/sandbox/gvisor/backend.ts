import { execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readlinkSync, realpathSync, symlinkSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { getSupportDir } from "../host/bootstrap.js";
import { nodeLimitFlags, resourceLimits } from "../host/command.js";
import { findOnPath, type Interpreter, InterpreterMissingError, resolveInterpreters } from "../host/interpreters.js";
import { trackRun } from "../host/run-reaper.js";
import {
  CA_CERTIFICATE_DIRS,
  lstatOrNull,
  SANDBOX_UID,
  SANDBOX_WORK_DIR,
  SYSTEM_DIRS,
  sandboxEnv,
  sandboxEtcFiles,
} from "../host/system-view.js";
import { tempDirPrefix } from "../host/temp-dirs.js";
import { type RunDisk, WorkDir } from "../host/work-dir.js";
import { limitsForRun, MAX_DISK_FILES, MIB } from "../limits.js";
import { CODE_FILE_NAME } from "../parse-error.js";
import { EGRESS_MOUNT, PYTHON_EGRESS_RELAY_FILE, type RunEgress, SOCKET_EGRESS, withRunEgress } from "../run/egress.js";
import { withArtifacts, writeProgramFiles } from "../run/local-sandbox.js";
import { collectOptionsFor, collectRun, isAlive, killProcessGroup, unavailableResult } from "../run/run-child.js";
import type { Language, RunHooks, RunRequest, RunResult, Sandbox, SandboxIsolation, SandboxLimits } from "../types.js";

/** How long runsc may take to tear a sandbox down before we stop waiting for it. */
const RUNSC_CLEANUP_TIMEOUT_MS = 10_000;

/**
 * `--platform=ptrace` because it needs no /dev/kvm and Debian's 2022 runsc has no systrap;
 * `--rootless` so runsc does not try to manage cgroups itself; `--network=none` leaves only loopback.
 */
const RUNSC_FLAGS = ["--network=none", "--platform=ptrace", "--rootless"];

export interface GvisorSpecInput {
  language: Language;
  limits: SandboxLimits;
  /** The interpreter's binary and the install dirs it needs (see `resolveInterpreters`). */
  executable: string;
  prefixes: string[];
  /** The read-only skeleton root (the merged-/usr symlinks and nothing else). */
  rootfs: string;
  /** Host dir bound writable at /work. */
  workDir: string;
  /** Host dir bound at /tmp (on the run's tmpfs); without it /tmp is a gVisor tmpfs. */
  tmpDir: string | null;
  etc: { source: string; target: string }[];
  /**
   * The run's egress proxy: its folder (socket, Node preload, Python relay) bound read-only at
   * EGRESS_MOUNT, which runsc lets the program connect to (`--host-uds=open`), and the variables.
   */
  egress?: { dir: string; env: Record<string, string> };
}

/**
 * The OCI runtime spec of one run: the same view as bwrap's (read-only /usr and interpreter
 * prefixes, a generated /etc, the work dir at /work, nothing else of the host), an unprivileged
 * uid with no capabilities, and the run's rlimits, which gVisor's own kernel enforces.
 */
export function buildGvisorSpec(input: GvisorSpecInput): Record<string, unknown> {
  const { limits, language } = input;
  const codeFile = CODE_FILE_NAME[language];
  // No pre-warm bootstrap: a sandbox starts per run, so Python runs main.py directly; with network,
  // after the relay to the proxy, which returns once it listens.
  const program =
    language === "python"
      ? [input.executable, "-I", "-u", codeFile]
      : [input.executable, ...nodeLimitFlags(limits), codeFile];
  const args =
    input.egress && language === "python"
      ? [
          "/bin/sh",
          "-c",
          `"$0" -I ${EGRESS_MOUNT}/${PYTHON_EGRESS_RELAY_FILE} && exec "$0" -I -u ${codeFile}`,
          input.executable,
        ]
      : program;
  const prefixes = input.prefixes.filter((prefix) => prefix !== "/usr" && !prefix.startsWith("/usr/"));
  const readOnly = (source: string, destination: string) => ({
    destination,
    type: "bind",
    source,
    options: ["rbind", "ro", "nosuid", "nodev"],
  });
  const tmpfsSize = `size=${limits.maxDiskMb}m`;
  return {
    ociVersion: "1.0.0",
    process: {
      terminal: false,
      user: { uid: SANDBOX_UID, gid: SANDBOX_UID },
      args,
      env: Object.entries({ ...sandboxEnv(prefixes), ...input.egress?.env }).map(([name, value]) => `${name}=${value}`),
      cwd: SANDBOX_WORK_DIR,
      capabilities: { bounding: [], effective: [], inheritable: [], permitted: [], ambient: [] },
      rlimits: resourceLimits(language, limits, { maxProcesses: true }).map(({ name, soft, hard }) => ({
        type: `RLIMIT_${name.toUpperCase()}`,
        soft,
        hard,
      })),
      noNewPrivileges: true,
    },
    root: { path: input.rootfs, readonly: true },
    hostname: "sandbox",
    mounts: [
      { destination: "/proc", type: "proc", source: "proc" },
      { destination: "/dev", type: "tmpfs", source: "tmpfs", options: ["nosuid", "noexec", "size=1m"] },
      { destination: "/dev/shm", type: "tmpfs", source: "shm", options: ["nosuid", "nodev", tmpfsSize] },
      readOnly("/usr", "/usr"),
      // A host without merged /usr has real /lib and /bin; the skeleton root holds only symlinks.
      ...SYSTEM_DIRS.filter((path) => lstatOrNull(path)?.isDirectory()).map((path) => readOnly(path, path)),
      ...prefixes.map((prefix) => readOnly(prefix, prefix)),
      ...input.etc.map(({ source, target }) => readOnly(source, target)),
      ...(input.egress
        ? [
            readOnly(input.egress.dir, EGRESS_MOUNT),
            ...CA_CERTIFICATE_DIRS.filter((path) => existsSync(path)).map((path) => readOnly(realpathSync(path), path)),
          ]
        : []),
      input.tmpDir
        ? { destination: "/tmp", type: "bind", source: input.tmpDir, options: ["rbind", "rw", "nosuid", "nodev"] }
        : { destination: "/tmp", type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev", tmpfsSize] },
      {
        destination: SANDBOX_WORK_DIR,
        type: "bind",
        source: input.workDir,
        options: ["rbind", "rw", "nosuid", "nodev"],
      },
    ],
    linux: {
      namespaces: [{ type: "pid" }, { type: "network" }, { type: "ipc" }, { type: "uts" }, { type: "mount" }],
    },
  };
}

/** Why gVisor cannot run here, or null when `runsc` is on PATH. */
export function probeGvisor(searchPath: string = process.env.PATH ?? ""): string | null {
  if (process.platform !== "linux") return "gVisor only runs on Linux";
  if (!findOnPath("runsc", searchPath))
    return "runsc (gVisor) is not installed; install it with `apt-get install runsc`";
  return null;
}

/**
 * Runs each program in a fresh gVisor sandbox (`runsc run` on an OCI bundle): the program's system
 * calls reach gVisor's user-space kernel, not the host's. A sandbox costs ~200 ms to start, so
 * nothing is pre-warmed.
 */
export class GvisorSandbox implements Sandbox {
  readonly kind = "gvisor" as const;
  /** `--network=none`: the run's proxy socket, bound in and opened through the gofer, is its one way out. */
  readonly egress = "enforced" as const;
  private readonly runsc = findOnPath("runsc");
  private readonly disk: RunDisk | null;

  constructor(private readonly limits: SandboxLimits) {
    const mount = findOnPath("mount");
    const umount = findOnPath("umount");
    // As root, /work and /tmp live on a host tmpfs of their own, as for bwrap, so bytes and inodes are bounded.
    this.disk =
      process.getuid?.() === 0 && mount && umount
        ? { mount, umount, bytes: limits.maxDiskMb * MIB, inodes: MAX_DISK_FILES }
        : null;
  }

  async run(request: RunRequest, hooks?: RunHooks): Promise<RunResult> {
    const startedAt = performance.now();
    const problem = probeGvisor();
    if (problem !== null || !this.runsc) return unavailableResult(problem ?? "runsc is not installed", startedAt);
    const interpreter = (await resolveInterpreters(request.python))[request.language];
    if (!interpreter) return unavailableResult(new InterpreterMissingError(request.language).message, startedAt);

    const limits = limitsForRun(this.limits, request);
    return withRunEgress(request.allowHosts ?? [], limits, SOCKET_EGRESS, startedAt, (egress) =>
      this.runIn(request, hooks, { startedAt, limits, interpreter, egress }),
    );
  }

  private async runIn(
    request: RunRequest,
    hooks: RunHooks | undefined,
    {
      startedAt,
      limits,
      interpreter,
      egress,
    }: { startedAt: number; limits: SandboxLimits; interpreter: Interpreter; egress: RunEgress | undefined },
  ): Promise<RunResult> {
    if (!this.runsc) throw new Error("runsc is not installed");
    // Only root may hand the work dir to the sandbox's uid; runs as another user are untested here.
    const owner = process.getuid?.() === 0 ? { uid: SANDBOX_UID, gid: SANDBOX_UID } : null;
    const workDir = await WorkDir.create(owner, this.disk && { ...this.disk, bytes: limits.maxDiskMb * MIB });
    const bundle = await mkdtemp(tempDirPrefix("run"));
    const stateDir = join(bundle, "state");
    const name = `selfheal-${randomBytes(6).toString("hex")}`;
    // Opening host sockets is the gofer's to allow: only a run that binds its proxy's socket gets it.
    const runsc = [this.runsc, `--root=${stateDir}`, ...RUNSC_FLAGS, ...(egress ? ["--host-uds=open"] : [])];
    let forgetRun = (): void => undefined;
    try {
      await writeProgramFiles(workDir, request);
      const spec = buildGvisorSpec({
        language: request.language,
        limits,
        executable: interpreter.executable,
        prefixes: interpreter.prefixes,
        rootfs: skeletonRoot(),
        workDir: workDir.path,
        tmpDir: workDir.tmpPath,
        etc: sandboxEtcFiles(getSupportDir()),
        ...(egress?.socketDir ? { egress: { dir: egress.socketDir, env: egress.env } } : {}),
      });
      await writeFile(join(bundle, "config.json"), JSON.stringify(spec));
      const [file = "", ...args] = [...runsc, "run", "--bundle", bundle, name];
      const child = spawn(file, args, { cwd: bundle, env: {}, detached: true, stdio: ["pipe", "pipe", "pipe"] });
      // runsc's sandbox and gofer die with runsc, which nothing kills should this process die mid-run.
      forgetRun = trackRun({ processGroup: child.pid });
      const killAll = (): void => {
        // runsc's sandbox and gofer processes leave our process group; only runsc can reach them.
        if (isAlive(child)) {
          const killer = spawn(file, [...runsc.slice(1), "kill", "--all", name, "KILL"], {
            stdio: "ignore",
            detached: true,
          });
          killer.on("error", () => undefined);
          killer.unref();
        }
        killProcessGroup(child);
      };
      const result = await collectRun(
        { child, killAll, exitCodeEncodesSignal: true },
        collectOptionsFor(request, limits, startedAt, hooks),
      );
      // Before the delete below: runsc is done with the work dir once the run has returned.
      return await withArtifacts(result, workDir, request);
    } finally {
      await runscQuiet(runsc, ["delete", "--force", name]);
      forgetRun();
      await Promise.all([workDir.remove(), rm(bundle, { recursive: true, force: true })]);
    }
  }

  describe(): SandboxIsolation {
    const { memoryMb, maxProcesses, cpuSeconds, maxDiskMb, maxFileMb } = this.limits;
    const notes = ["gVisor's ptrace platform: each system call is trapped, so programs run several times slower"];
    if (!this.disk) notes.push("no tmpfs work dir: only root can mount one");
    notes.push(
      "installed packages (settings.packages) are not mounted: Python runs main.py without the bootstrap that puts them on sys.path",
    );
    return {
      kind: "gvisor",
      memory: { scope: "process", by: `RLIMIT_AS ${memoryMb} MiB per process, held by gVisor's kernel` },
      processes: { scope: "run", by: `RLIMIT_NPROC ${maxProcesses} inside the sandbox's own kernel` },
      // Measured: the spec's RLIMIT_CPU is set inside the sandbox, but a loop past it runs on (the
      // conformance suite's CPU case); only the wall clock ends a busy program here.
      cpu: {
        scope: "none",
        by: `none: gVisor's kernel does not enforce RLIMIT_CPU (${cpuSeconds} s); the wall clock holds`,
      },
      disk: this.disk
        ? { scope: "run", by: `a host tmpfs of ${maxDiskMb} MiB and ${MAX_DISK_FILES} inodes for /work and /tmp` }
        : { scope: "process", by: `RLIMIT_FSIZE ${maxFileMb} MiB per file in a host work dir` },
      syscalls: { scope: "run", by: "gVisor's user-space kernel; the host's kernel sees only runsc's own calls" },
      notes,
      start: {
        forked: [],
        by: "cold: each run is a gVisor sandbox of its own (runsc do); runs forked inside one long-lived sandbox would share its kernel (its memory, page cache and network stack) with each other",
      },
    };
  }

  /** runsc is looked for on PATH when the sandbox is made; there is nothing else to probe. */
  async prepare(): Promise<void> {}

  /** A sandbox starts per run; there is nothing to warm. */
  async prewarm(): Promise<void> {}

  async close(): Promise<void> {}
}

/** Runs a runsc housekeeping command, bounded in time; its failure (nothing left to delete) is fine. */
function runscQuiet(runsc: string[], args: string[]): Promise<void> {
  const [file = "", ...flags] = runsc;
  return new Promise((resolve) => {
    execFile(file, [...flags, ...args], { timeout: RUNSC_CLEANUP_TIMEOUT_MS }, () => resolve());
  });
}

/** An empty root with the merged-/usr symlinks, made once in the support dir; the mounts add the rest. */
function skeletonRoot(): string {
  const root = join(getSupportDir(), "gvisor-root");
  if (existsSync(join(root, "usr"))) return root;
  mkdirSync(root, { recursive: true, mode: 0o755 });
  for (const link of SYSTEM_DIRS) {
    const entry = lstatOrNull(link);
    if (entry?.isSymbolicLink()) symlinkSync(readlinkSync(link), join(root, link.slice(1)));
  }
  for (const directory of ["etc", "proc", "dev", "tmp", SANDBOX_WORK_DIR.slice(1), "usr"]) {
    mkdirSync(join(root, directory), { recursive: true, mode: 0o755 });
  }
  return root;
}
