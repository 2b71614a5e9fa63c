import { spawn, spawnSync } from "node:child_process";
import {
  closeSync,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readlinkSync,
  realpathSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";

import { getSupportDir, inheritedFdsEnv, sendGo, usesBootstrap } from "../host/bootstrap.js";
import { type CgroupSupport, detectCgroups, RunCgroup } from "../host/cgroups.js";
import { interpreterCommand } from "../host/command.js";
import { findOnPath, InterpreterMissingError, type Interpreters, resolveInterpreters } from "../host/interpreters.js";
import { trackRun } from "../host/run-reaper.js";
import { type SeccompFilter, seccompFilter } from "../host/seccomp.js";
import { type RunDisk, WorkDir } from "../host/work-dir.js";
import { MAX_DISK_FILES, MIB } from "../limits.js";
import type { Launcher, Reservation } from "../run/local-sandbox.js";
import { killProcessGroup, type LaunchedProgram, type RunWideLimits } from "../run/run-child.js";
import type { Containment, Language, SandboxIsolation, SandboxLimits } from "../types.js";

/** Where the work dir and the support files appear inside the sandbox. */
export const SANDBOX_WORK_DIR = "/work";
export const SANDBOX_SUPPORT_DIR = "/.selfheal";
/** Where a run's installed packages appear: on sys.path for Python; Node's are bound at /node_modules. */
export const SANDBOX_PACKAGES_DIR = "/.selfheal-packages";
/** The uid and gid the program sees inside its user namespace. */
export const SANDBOX_UID = 1000;
/** The fd bwrap reads the seccomp BPF from (0-2 are the pipes, 3 the pre-warm control pipe). */
const SECCOMP_FD = 4;

/**
 * When selfheal runs as root, the code must not: RLIMIT_NPROC is ignored for the real root user
 * even inside a user namespace, so a fork bomb would go unchecked. Each run then gets its own
 * unprivileged host uid from this range (no /etc/passwd entry needed), which makes the process cap
 * per run and keeps concurrent runs from counting against each other. The range is far above any
 * uid a distribution or a rootless-container subuid range hands out.
 */
const HOST_UID_BASE = 1_500_000_000;
const HOST_UID_RANGE = 1_000_000;

/** The top-level system directories: symlinks into /usr on a merged-/usr host, real directories otherwise. */
export const SYSTEM_DIRS = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/** What bwrap needs from the host, found once per process. */
export interface BwrapHost {
  bwrap: string;
  prlimit: string;
  /** Present when we run as root and must drop to an unprivileged uid before bwrap. */
  setpriv: string | null;
  /** The system-call filter every program starts under, or why there is none. */
  seccomp: SeccompFilter;
  /** mount(8) and umount(8) when we may mount a tmpfs per run (root), or why not. */
  tmpfs: { mount: string; umount: string } | { reason: string };
  /** A POSIX shell, which puts each run into its cgroups before exec'ing the rest. */
  shell: string | null;
}

export type BwrapProbe = { usable: true; host: BwrapHost } | { usable: false; reason: string };

let probeResult: BwrapProbe | undefined;

/**
 * Checks once per process that bubblewrap exists and can create its namespaces here (it cannot in
 * many containers, or where unprivileged user namespaces are disabled), by running `true` in a
 * sandbox built exactly as a real run's.
 */
export function probeBwrap(options: { path?: string } = {}): BwrapProbe {
  // Only the real PATH is cached; another search path is a what-if question (tests ask it).
  if (options.path !== undefined) return runProbe(options.path);
  probeResult ??= runProbe(process.env.PATH ?? "");
  return probeResult;
}

function runProbe(searchPath: string): BwrapProbe {
  if (process.platform !== "linux") return { usable: false, reason: "bubblewrap only works on Linux" };
  const bwrap = findOnPath("bwrap", searchPath);
  if (!bwrap) {
    return {
      usable: false,
      reason:
        "bubblewrap is not installed; install it with `apt-get install bubblewrap` (Debian/Ubuntu) or `dnf install bubblewrap`",
    };
  }
  const prlimit = findOnPath("prlimit", searchPath);
  if (!prlimit)
    return { usable: false, reason: "prlimit (util-linux) is needed to set limits inside the bwrap sandbox" };
  const isRoot = process.getuid?.() === 0;
  const setpriv = isRoot ? findOnPath("setpriv", searchPath) : null;
  if (isRoot && !setpriv) {
    return { usable: false, reason: "running as root needs setpriv (util-linux) to run code as an unprivileged user" };
  }
  const host: BwrapHost = {
    bwrap,
    prlimit,
    setpriv,
    seccomp: seccompFilter(),
    tmpfs: probeTmpfs(isRoot, searchPath),
    shell: findOnPath("sh", searchPath),
  };
  const trueCommand = findOnPath("true", searchPath) ?? "/bin/true";
  const probeDir = join(getSupportDir(), "probe-work");
  mkdirSync(probeDir, { recursive: true });
  const argv = buildBwrapArgv({
    host,
    hostUid: isRoot ? HOST_UID_BASE : null,
    workDir: probeDir,
    supportDir: getSupportDir(),
    prefixes: [],
    command: [trueCommand],
    seccomp: host.seccomp.usable,
  });
  const [file = "", ...args] = argv;
  const filterFd = host.seccomp.usable ? openSync(host.seccomp.path, "r") : null;
  let probe: ReturnType<typeof spawnSync>;
  try {
    probe = spawnSync(file, args, {
      timeout: 10_000,
      stdio: ["ignore", "ignore", "pipe", "ignore", filterFd ?? "ignore"],
      env: {},
    });
  } finally {
    if (filterFd !== null) closeSync(filterFd);
  }
  if (probe.status === 0) return { usable: true, host };
  const detail = probe.error?.message ?? probe.stderr?.toString().trim() ?? `exit ${probe.status}`;
  return {
    usable: false,
    reason: `bubblewrap is installed but cannot create a sandbox here: ${detail || `exit ${probe.status}`}`,
  };
}

export interface BwrapArgvInput {
  host: Pick<BwrapHost, "bwrap" | "setpriv">;
  /** Unprivileged host uid to run as (root only); null to keep our own. */
  hostUid: number | null;
  /** Host path of the run's work dir, bound writable at /work. */
  workDir: string;
  supportDir: string;
  /** Interpreter install dirs to bind read-only at the same path. */
  prefixes: string[];
  /** The program to start inside, with its limits (see `interpreterCommand`). */
  command: string[];
  env?: Record<string, string>;
  tmpfsBytes?: number;
  /** Host dir to bind at /tmp (on the run's tmpfs); without it /tmp is a tmpfs bounded in bytes only. */
  tmpDir?: string | null;
  /** Read the seccomp BPF from fd 4. */
  seccomp?: boolean;
  /** A command prefix that joins the run's cgroups; runs first, as the caller (root). */
  cgroupJoin?: string[];
  /** A host dir of installed packages, bound read-only at `at` (see `packageMount`). */
  packages?: { dir: string; at: string } | null;
  /**
   * For the package installer only, never for a program: keep the host's network namespace and
   * bind the host's resolver and CA files, so pip or npm can reach their index.
   */
  shareNetwork?: boolean;
}

/** What a process with the host's network reads to resolve names and check certificates. */
const NETWORK_ETC = [
  "/etc/resolv.conf",
  "/etc/hosts",
  "/etc/nsswitch.conf",
  "/etc/gai.conf",
  "/etc/ssl",
  "/etc/ca-certificates",
];

/** Where a cache entry is bound for a language: Python's whole entry, Node's node_modules at /node_modules. */
export function packageMount(language: Language, packagesDir: string): { dir: string; at: string } {
  return language === "python"
    ? { dir: packagesDir, at: SANDBOX_PACKAGES_DIR }
    : { dir: join(packagesDir, "node_modules"), at: "/node_modules" };
}

/**
 * The whole command line of a bwrap run. Exported so tests can read what the sandbox allows.
 *
 * Layout inside: read-only /usr (plus the merged-/usr symlinks), read-only interpreter prefixes,
 * a minimal /etc, fresh /proc, /dev and /tmp, the work dir at /work, and nothing else of the host.
 */
export function buildBwrapArgv(input: BwrapArgvInput): string[] {
  const prefixes = input.prefixes.filter((prefix) => !isUnder(prefix, "/usr"));
  const argv: string[] = [...(input.cgroupJoin ?? []), ...reexposeHiddenPrefixes(input, prefixes)];
  if (input.hostUid !== null && input.host.setpriv) {
    argv.push(input.host.setpriv, `--reuid=${input.hostUid}`, `--regid=${input.hostUid}`, "--clear-groups", "--");
  }
  argv.push(...isolationFlags(input), ...sandboxFileSystem(input, prefixes), "--clearenv");
  for (const [name, value] of Object.entries(input.env ?? sandboxEnv(prefixes))) argv.push("--setenv", name, value);
  argv.push("--", ...input.command);
  return argv;
}

/**
 * Dropping to an unprivileged uid happens before bwrap, so bwrap itself cannot reach what that
 * uid cannot: an interpreter under /root (pyenv) would be invisible. A first bwrap, still root
 * and sharing every namespace but the mount one, re-exposes just those prefixes.
 */
function reexposeHiddenPrefixes(input: BwrapArgvInput, prefixes: string[]): string[] {
  const { host } = input;
  const argv: string[] = [];
  // The package cache lives under the caller's home by default, which may be just as hidden.
  const bound = input.packages ? [...prefixes, input.packages.dir] : prefixes;
  const hidden = input.hostUid === null ? [] : bound.filter((prefix) => hiddenAncestor(prefix) !== null);
  if (hidden.length > 0) {
    argv.push(host.bwrap, "--dev-bind", "/", "/", "--die-with-parent");
    const covered = new Set<string>();
    for (const prefix of hidden) {
      const ancestor = hiddenAncestor(prefix) ?? prefix;
      if (!covered.has(ancestor)) {
        covered.add(ancestor);
        argv.push("--perms", "0755", "--tmpfs", ancestor);
      }
      for (
        let directory = dirname(prefix);
        isUnder(directory, ancestor) && directory !== ancestor;
        directory = dirname(directory)
      ) {
        argv.push("--perms", "0755", "--dir", directory);
      }
      argv.push("--ro-bind", prefix, prefix);
    }
    argv.push("--");
  }
  return argv;
}

/** The namespaces, identity and capabilities of the sandboxed process, and its seccomp filter. */
function isolationFlags(input: BwrapArgvInput): string[] {
  return [
    input.host.bwrap,
    "--unshare-user",
    "--unshare-pid",
    ...(input.shareNetwork ? [] : ["--unshare-net"]),
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--disable-userns",
    "--uid",
    String(SANDBOX_UID),
    "--gid",
    String(SANDBOX_UID),
    "--hostname",
    "sandbox",
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
    // bwrap loads the filter last, just before exec'ing the program: its own mounts are not filtered.
    ...(input.seccomp ? ["--seccomp", String(SECCOMP_FD)] : []),
  ];
}

/** What the program sees: /usr and the interpreters read-only, a minimal /etc, sized tmpfs, its work dir. */
function sandboxFileSystem(input: BwrapArgvInput, prefixes: string[]): string[] {
  const argv: string[] = ["--ro-bind", "/usr", "/usr"];
  for (const directory of SYSTEM_DIRS) {
    const entry = lstatOrNull(directory);
    if (entry?.isSymbolicLink()) argv.push("--symlink", readlinkSync(directory), directory);
    else if (entry?.isDirectory()) argv.push("--ro-bind", directory, directory);
  }
  for (const prefix of prefixes) argv.push("--ro-bind", prefix, prefix);
  if (input.packages) argv.push("--ro-bind", input.packages.dir, input.packages.at);

  // /etc: only what the C library, Python and Node read at start; no shadow, no host accounts.
  argv.push(...minimalEtc(input.supportDir));
  // Bound over the generated files, whose hosts and nsswitch.conf know nothing but localhost.
  if (input.shareNetwork) {
    for (const path of NETWORK_ETC) if (existsSync(path)) argv.push("--ro-bind", realpathSync(path), path);
  }

  const tmpfsSize = String(input.tmpfsBytes ?? 64 * MIB);
  argv.push(
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    // Sized, because a tmpfs fills the host's memory; /dev/shm is kept for multiprocessing.
    "--size",
    tmpfsSize,
    "--tmpfs",
    "/dev/shm",
    ...(input.tmpDir ? ["--bind", input.tmpDir, "/tmp"] : ["--size", tmpfsSize, "--tmpfs", "/tmp"]),
    "--ro-bind",
    input.supportDir,
    SANDBOX_SUPPORT_DIR,
    "--bind",
    input.workDir,
    SANDBOX_WORK_DIR,
    // bwrap builds the tree on an unbounded tmpfs owned by the sandbox user (/, /etc, /dev); once
    // the mounts are in place nothing there needs writing.
    "--remount-ro",
    "/dev",
    "--remount-ro",
    "/",
    "--chdir",
    SANDBOX_WORK_DIR,
  );
  return argv;
}

/** PATH with the interpreters first, HOME at the work dir, and the host's locale. */
export function sandboxEnv(prefixes: string[]): Record<string, string> {
  const path = [...prefixes.map((prefix) => join(prefix, "bin")), "/usr/local/bin", "/usr/bin", "/bin"];
  const env: Record<string, string> = { PATH: [...new Set(path)].join(":"), HOME: SANDBOX_WORK_DIR };
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && (name === "LANG" || name === "LANGUAGE" || name.startsWith("LC_"))) env[name] = value;
  }
  env.LANG ??= "C.UTF-8";
  return env;
}

/** The files a sandbox's /etc holds: generated accounts and hosts, plus the host's loader cache and timezone. */
export interface SandboxEtcFile {
  /** Path on the host. */
  source: string;
  /** Path inside the sandbox. */
  target: string;
}

/** Writes the generated /etc files once into the support dir and lists what a sandbox binds at /etc. */
export function sandboxEtcFiles(supportDir: string): SandboxEtcFile[] {
  const etc = join(supportDir, "etc");
  if (!existsSync(join(etc, "passwd"))) {
    mkdirSync(etc, { recursive: true, mode: 0o755 });
    // Node's os.userInfo() and Python's getpass need the running uid to have an entry.
    writeFileSync(
      join(etc, "passwd"),
      `root:x:0:0:root:/nonexistent:/usr/sbin/nologin\nsandbox:x:${SANDBOX_UID}:${SANDBOX_UID}:sandbox:${SANDBOX_WORK_DIR}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
      { mode: 0o644 },
    );
    writeFileSync(join(etc, "group"), `root:x:0:\nsandbox:x:${SANDBOX_UID}:\nnogroup:x:65534:\n`, { mode: 0o644 });
    writeFileSync(join(etc, "hosts"), "127.0.0.1 localhost sandbox\n::1 localhost\n", { mode: 0o644 });
    writeFileSync(join(etc, "nsswitch.conf"), "passwd: files\ngroup: files\nhosts: files\n", { mode: 0o644 });
  }
  const files = ["passwd", "group", "hosts", "nsswitch.conf"].map((name) => ({
    source: join(etc, name),
    target: `/etc/${name}`,
  }));
  // /etc/alternatives: Debian's switchable libraries are symlinks through it (numpy's libblas.so.3);
  // /etc/matplotlibrc: Debian's matplotlib keeps its defaults there and will not import without them.
  // /etc/fonts: without it fontconfig prints "Fontconfig error: Cannot load default config file" on
  // every matplotlib run, noise in the stderr the fixer reads; it names font folders, nothing secret.
  for (const file of ["/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/alternatives", "/etc/matplotlibrc", "/etc/fonts"]) {
    if (existsSync(file)) files.push({ source: file, target: file });
  }
  const localtime = resolveOrNull("/etc/localtime");
  if (localtime) files.push({ source: localtime, target: "/etc/localtime" });
  return files;
}

/** bwrap arguments for /etc: only what the C library, Python and Node read at start. */
function minimalEtc(supportDir: string): string[] {
  const args = ["--dir", "/etc"];
  for (const { source, target } of sandboxEtcFiles(supportDir)) args.push("--ro-bind", source, target);
  return args;
}

/**
 * Whether a tmpfs per run can be mounted here: only root may, and a container may forbid even
 * that, so one is mounted and unmounted to find out.
 */
export function probeTmpfs(isRoot: boolean, searchPath: string): BwrapHost["tmpfs"] {
  if (!isRoot) return { reason: "only root can mount a tmpfs per run" };
  const mount = findOnPath("mount", searchPath);
  const umount = findOnPath("umount", searchPath);
  if (!mount || !umount) return { reason: "mount(8) and umount(8) (util-linux) are needed to mount a tmpfs per run" };
  const point = join(getSupportDir(), "probe-tmpfs");
  mkdirSync(point, { recursive: true });
  const mounted = spawnSync(mount, ["-t", "tmpfs", "-o", "size=1m,nr_inodes=16", "selfheal-probe", point], {
    stdio: ["ignore", "ignore", "pipe"],
    timeout: 10_000,
  });
  if (mounted.status !== 0)
    return { reason: `cannot mount a tmpfs here: ${mounted.stderr?.toString().trim() || `exit ${mounted.status}`}` };
  spawnSync(umount, [point], { stdio: "ignore", timeout: 10_000 });
  rmdirSync(point);
  return { mount, umount };
}

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
  private readonly isRoot = process.getuid?.() === 0;
  private readonly cgroups: CgroupSupport;
  private readonly disk: RunDisk | null;
  /** The next run's resources, prepared ahead of need (see `scheduleSpare`). */
  private spare: Promise<RunResources | null> | null = null;
  private spareTimer: NodeJS.Immediate | null = null;
  private closed = false;

  constructor(
    private readonly limits: SandboxLimits,
    private readonly host: BwrapHost,
    options: { cgroups?: CgroupSupport } = {},
  ) {
    this.cgroups = host.shell
      ? (options.cgroups ?? detectCgroups())
      : { version: null, reason: "no sh(1) to join the run's cgroup" };
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

  async reserve(python?: string): Promise<Reservation> {
    const spare = this.spare;
    this.spare = null;
    const resources = (await spare) ?? (await this.prepare());
    this.scheduleSpare();
    const { hostUid, group, workDir } = resources;
    const interpreters = await resolveInterpreters(python);
    const forgetRuns: (() => void)[] = [];
    return {
      workDir,
      spawn: (language, warm, packagesDir) => {
        const program = this.spawn(interpreters, workDir, hostUid, group, language, warm, packagesDir);
        // Kills it should this process die mid-run: bwrap's --die-with-parent cannot, as root (run-reaper.ts).
        forgetRuns.push(trackRun({ processGroup: program.child.pid, ...group?.killTargets }));
        return program;
      },
      release: async () => {
        await releaseResources(resources);
        for (const forget of forgetRuns.splice(0)) forget();
      },
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.spareTimer) clearImmediate(this.spareTimer);
    this.spareTimer = null;
    const spare = await this.spare;
    this.spare = null;
    if (spare) await releaseResources(spare);
    await WorkDir.releaseIdleMounts();
  }

  /** A uid, a cgroup and a mounted work dir for one run; all given back if any of them fails. */
  private async prepare(): Promise<RunResources> {
    const hostUid = this.isRoot ? hostUids.acquire() : null;
    let group: RunCgroup | null = null;
    try {
      group = this.cgroups.version === null ? null : RunCgroup.create(this.cgroups, this.limits);
      const owner = hostUid === null ? null : { uid: hostUid, gid: hostUid };
      const workDir = await WorkDir.create(owner, this.disk);
      return { hostUid, group, workDir, released: false };
    } catch (error) {
      if (hostUid !== null) hostUids.release(hostUid);
      await group?.remove();
      throw error;
    }
  }

  /**
   * Prepares the next run's resources ahead of need: a memory cgroup made just before a run costs
   * it ~9 ms and a tmpfs mount a process start, made 300 ms ahead they cost it nothing. A
   * pre-warmed interpreter already gets its resources at pre-warm time; this is for cold runs.
   */
  private scheduleSpare(): void {
    if (this.spare || this.spareTimer || this.closed || (this.cgroups.version === null && !this.disk)) return;
    this.spareTimer = setImmediate(() => {
      this.spareTimer = null;
      if (this.closed || this.spare) return;
      // A failure here is the next run's to report, when it prepares its own.
      this.spare = this.prepare().catch(() => null);
    });
    // A spare must not keep a CLI alive.
    this.spareTimer.unref?.();
  }

  private spawn(
    interpreters: Interpreters,
    workDir: WorkDir,
    hostUid: number | null,
    group: RunCgroup | null,
    language: Language,
    warm: boolean,
    packagesDir?: string,
  ): LaunchedProgram {
    const interpreter = interpreters[language];
    if (!interpreter) throw new InterpreterMissingError(language);
    const packages = packagesDir ? packageMount(language, packagesDir) : null;
    const command = interpreterCommand({
      language,
      executable: interpreter.executable,
      limits: this.limits,
      warm,
      supportDir: SANDBOX_SUPPORT_DIR,
      prlimit: this.host.prlimit,
      // Inside its own user namespace the count is per sandbox, so the process cap is safe to set.
      maxProcesses: true,
      pythonPackagesDir: language === "python" ? packages?.at : null,
    });
    const control = usesBootstrap(language, warm);
    const ours = [0, 1, 2, ...(control ? [3] : []), ...(this.host.seccomp.usable ? [SECCOMP_FD] : [])];
    const argv = buildBwrapArgv({
      host: this.host,
      hostUid,
      env: { ...sandboxEnv(interpreter.prefixes), ...inheritedFdsEnv(language, ours) },
      workDir: workDir.path,
      supportDir: getSupportDir(),
      prefixes: interpreter.prefixes,
      command,
      tmpfsBytes: this.limits.maxDiskMb * MIB,
      tmpDir: workDir.tmpPath,
      seccomp: this.host.seccomp.usable,
      packages,
      ...(group && this.host.shell ? { cgroupJoin: group.joinCommand(this.host.shell) } : {}),
    });
    const [file = "", ...args] = argv;
    const filterFd = this.host.seccomp.usable ? openSync(this.host.seccomp.path, "r") : null;
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(file, args, {
        env: {},
        // bwrap, its pid-namespace init and the program share this group; killing the group kills
        // the init, and the kernel then kills everything left in the namespace, setsid'd or not.
        detached: true,
        stdio: ["pipe", "pipe", "pipe", control ? "pipe" : "ignore", filterFd ?? "ignore"],
      });
    } finally {
      // The child has its own copy; bwrap reads it and closes it before the program starts.
      if (filterFd !== null) closeSync(filterFd);
    }
    if (!warm) sendGo(child);
    const killAll = (): void => {
      killProcessGroup(child);
      group?.killAll();
    };
    return {
      child,
      killAll,
      exitCodeEncodesSignal: true,
      ...(group ? { runLimits: runWideLimits(group, this.limits) } : {}),
    };
  }
}

/** What one run holds until it is released. */
interface RunResources {
  hostUid: number | null;
  group: RunCgroup | null;
  workDir: WorkDir;
  released: boolean;
}

async function releaseResources(resources: RunResources): Promise<void> {
  if (resources.released) return;
  resources.released = true;
  try {
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

/** Hands out a distinct unprivileged host uid to each run in flight. */
class HostUidPool {
  private readonly inUse = new Set<number>();
  // Different selfheal processes (parallel test workers) start at different points of the range.
  private readonly offset = (process.pid * 64) % HOST_UID_RANGE;

  acquire(): number {
    for (let slot = 0; slot < HOST_UID_RANGE; slot++) {
      const uid = HOST_UID_BASE + ((this.offset + slot) % HOST_UID_RANGE);
      if (!this.inUse.has(uid)) {
        this.inUse.add(uid);
        return uid;
      }
    }
    throw new Error("no free sandbox uid");
  }

  release(uid: number): void {
    this.inUse.delete(uid);
  }
}

const hostUids = new HostUidPool();

/** The highest directory above `path` that other users cannot enter (e.g. /root), or null if none. */
function hiddenAncestor(path: string): string | null {
  let hidden: string | null = null;
  for (let directory = dirname(path); directory !== "/"; directory = dirname(directory)) {
    const mode = statSync(directory, { throwIfNoEntry: false })?.mode;
    if (mode !== undefined && (mode & 0o001) === 0) hidden = directory;
  }
  return hidden;
}

function isUnder(path: string, directory: string): boolean {
  return path === directory || path.startsWith(directory.endsWith("/") ? directory : `${directory}/`);
}

export function lstatOrNull(path: string): ReturnType<typeof lstatSync> | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

function resolveOrNull(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}
