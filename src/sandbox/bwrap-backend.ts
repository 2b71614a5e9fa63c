import { spawn, spawnSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, readlinkSync, realpathSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

import { getSupportDir, sendGo, usesBootstrap } from "./bootstrap.js";
import { interpreterCommand } from "./command.js";
import { findOnPath, InterpreterMissingError, type Interpreters, resolveInterpreters } from "./interpreters.js";
import type { Launcher, Reservation } from "./local-sandbox.js";
import { killProcessGroup, type LaunchedProgram } from "./run-child.js";
import type { Language, SandboxLimits } from "./types.js";
import { WorkDir } from "./work-dir.js";

const MIB = 1024 * 1024;

/** Where the work dir and the support files appear inside the sandbox. */
export const SANDBOX_WORK_DIR = "/work";
export const SANDBOX_SUPPORT_DIR = "/.selfheal";
/** The uid and gid the program sees inside its user namespace. */
const SANDBOX_UID = 1000;

/**
 * When selfheal runs as root, the code must not: RLIMIT_NPROC is ignored for the real root user
 * even inside a user namespace, so a fork bomb would go unchecked. Each run then gets its own
 * unprivileged host uid from this range (no /etc/passwd entry needed), which makes the process cap
 * per run and keeps concurrent runs from counting against each other. The range is far above any
 * uid a distribution or a rootless-container subuid range hands out.
 */
const HOST_UID_BASE = 1_500_000_000;
const HOST_UID_RANGE = 1_000_000;

const SYSTEM_DIRS = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/** What bwrap needs from the host, found once per process. */
export interface BwrapHost {
  bwrap: string;
  prlimit: string;
  /** Present when we run as root and must drop to an unprivileged uid before bwrap. */
  setpriv: string | null;
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
  const host: BwrapHost = { bwrap, prlimit, setpriv };
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
  });
  const [file = "", ...args] = argv;
  const probe = spawnSync(file, args, { timeout: 10_000, stdio: ["ignore", "ignore", "pipe"], env: {} });
  if (probe.status === 0) return { usable: true, host };
  const detail = probe.error?.message ?? probe.stderr?.toString().trim() ?? `exit ${probe.status}`;
  return {
    usable: false,
    reason: `bubblewrap is installed but cannot create a sandbox here: ${detail || `exit ${probe.status}`}`,
  };
}

export interface BwrapArgvInput {
  host: BwrapHost;
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
}

/**
 * The whole command line of a bwrap run. Exported so tests can read what the sandbox allows.
 *
 * Layout inside: read-only /usr (plus the merged-/usr symlinks), read-only interpreter prefixes,
 * a minimal /etc, fresh /proc, /dev and /tmp, the work dir at /work, and nothing else of the host.
 */
export function buildBwrapArgv(input: BwrapArgvInput): string[] {
  const { host } = input;
  const prefixes = input.prefixes.filter((prefix) => !isUnder(prefix, "/usr"));
  const argv: string[] = [];

  // Dropping to an unprivileged uid happens before bwrap, so bwrap itself cannot reach what that
  // uid cannot: an interpreter under /root (pyenv) would be invisible. A first bwrap, still root
  // and sharing every namespace but the mount one, re-exposes just those prefixes.
  const hidden = input.hostUid === null ? [] : prefixes.filter((prefix) => hiddenAncestor(prefix) !== null);
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

  if (input.hostUid !== null && host.setpriv) {
    argv.push(host.setpriv, `--reuid=${input.hostUid}`, `--regid=${input.hostUid}`, "--clear-groups", "--");
  }

  argv.push(
    host.bwrap,
    "--unshare-user",
    "--unshare-pid",
    "--unshare-net",
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
    "--ro-bind",
    "/usr",
    "/usr",
  );
  for (const directory of SYSTEM_DIRS) {
    const entry = lstatOrNull(directory);
    if (entry?.isSymbolicLink()) argv.push("--symlink", readlinkSync(directory), directory);
    else if (entry?.isDirectory()) argv.push("--ro-bind", directory, directory);
  }
  for (const prefix of prefixes) argv.push("--ro-bind", prefix, prefix);

  // /etc: only what the C library, Python and Node read at start; no shadow, no host accounts.
  argv.push(...minimalEtc(input.supportDir));

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
    "--size",
    tmpfsSize,
    "--tmpfs",
    "/tmp",
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
    "--clearenv",
  );
  for (const [name, value] of Object.entries(input.env ?? sandboxEnv(prefixes))) argv.push("--setenv", name, value);
  argv.push("--", ...input.command);
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

/** bwrap arguments for /etc: generated account and host files, plus the loader cache and timezone. */
function minimalEtc(supportDir: string): string[] {
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
  const args = ["--dir", "/etc"];
  for (const name of ["passwd", "group", "hosts", "nsswitch.conf"])
    args.push("--ro-bind", join(etc, name), `/etc/${name}`);
  for (const file of ["/etc/ld.so.cache", "/etc/ld.so.conf"]) {
    if (existsSync(file)) args.push("--ro-bind", file, file);
  }
  const localtime = resolveOrNull("/etc/localtime");
  if (localtime) args.push("--ro-bind", localtime, "/etc/localtime");
  return args;
}

/** Runs each program in its own bubblewrap sandbox; see `buildBwrapArgv` for what it can see. */
export class BwrapLauncher implements Launcher {
  readonly kind = "bwrap" as const;
  private readonly isRoot = process.getuid?.() === 0;

  constructor(
    private readonly limits: SandboxLimits,
    private readonly host: BwrapHost,
  ) {}

  async reserve(): Promise<Reservation> {
    const hostUid = this.isRoot ? hostUids.acquire() : null;
    let released = false;
    try {
      const owner = hostUid === null ? null : { uid: hostUid, gid: hostUid };
      const [interpreters, workDir] = await Promise.all([resolveInterpreters(), WorkDir.create(owner)]);
      return {
        workDir,
        spawn: (language, warm) => this.spawn(interpreters, workDir, hostUid, language, warm),
        release: async () => {
          if (released) return;
          released = true;
          try {
            await workDir.remove();
          } finally {
            if (hostUid !== null) hostUids.release(hostUid);
          }
        },
      };
    } catch (error) {
      if (hostUid !== null) hostUids.release(hostUid);
      throw error;
    }
  }

  private spawn(
    interpreters: Interpreters,
    workDir: WorkDir,
    hostUid: number | null,
    language: Language,
    warm: boolean,
  ): LaunchedProgram {
    const interpreter = interpreters[language];
    if (!interpreter) throw new InterpreterMissingError(language);
    const command = interpreterCommand({
      language,
      executable: interpreter.executable,
      limits: this.limits,
      warm,
      supportDir: SANDBOX_SUPPORT_DIR,
      prlimit: this.host.prlimit,
      // Inside its own user namespace the count is per sandbox, so the process cap is safe to set.
      maxProcesses: true,
    });
    const argv = buildBwrapArgv({
      host: this.host,
      hostUid,
      workDir: workDir.path,
      supportDir: getSupportDir(),
      prefixes: interpreter.prefixes,
      command,
      tmpfsBytes: 4 * this.limits.maxFileMb * MIB,
    });
    const [file = "", ...args] = argv;
    const child = spawn(file, args, {
      env: {},
      // bwrap, its pid-namespace init and the program share this group; killing the group kills
      // the init, and the kernel then kills everything left in the namespace, setsid'd or not.
      detached: true,
      stdio: ["pipe", "pipe", "pipe", usesBootstrap(language, warm) ? "pipe" : "ignore"],
    });
    if (!warm) sendGo(child);
    const killAll = (): void => killProcessGroup(child);
    return { child, killAll, exitCodeEncodesSignal: true };
  }
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

function lstatOrNull(path: string): ReturnType<typeof lstatSync> | null {
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
