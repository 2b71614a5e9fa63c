import { existsSync, readlinkSync, realpathSync, statSync } from "node:fs";
import { dirname } from "node:path";

import { MIB } from "../limits.js";
import type { SeccompFilter } from "./seccomp.js";
import {
  CA_CERTIFICATE_DIRS,
  lstatOrNull,
  SANDBOX_SUPPORT_DIR,
  SANDBOX_UID,
  SANDBOX_WORK_DIR,
  SYSTEM_DIRS,
  sandboxEnv,
  sandboxEtcFiles,
} from "./system-view.js";

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

/** The fd bwrap reads the seccomp BPF from (0-2 are the pipes, 3 the pre-warm control pipe). */
export const SECCOMP_FD = 4;
/** The fd a sandbox made ahead of need waits on, set up, before it starts its program. */
export const BLOCK_FD = 5;

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
  /**
   * Make the whole sandbox now, then wait for a byte on fd 5 before starting the program, so a run
   * that comes later pays only for its interpreter (see `ParkedSandbox`).
   */
  parked?: boolean;
  /** A command prefix that joins the run's cgroups; runs first, as the caller (root). */
  cgroupJoin?: string[];
  /** A host dir of installed packages, bound read-only at `at` (see `packageMount`). */
  packages?: { dir: string; at: string } | null;
  /** The folder of the run's egress proxy socket, bound read-only at `at`: the sandbox's one way out. */
  egressDir?: { dir: string; at: string };
  /**
   * For the package installer only, never for a program: keep the host's network namespace and
   * bind the host's resolver and CA files, so pip or npm can reach their index.
   */
  shareNetwork?: boolean;
  /**
   * For the fork server only (src/sandbox/fork), never for a program: keep every capability in the
   * sandbox's own user namespace, which each forked run drops before its program starts, and bind
   * the host's runs folder, where each run's work dir appears, at `at`.
   */
  forkServer?: { runsDir: string; at: string };
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
    // The fork server makes each run's namespaces and mounts; the run drops them before its program.
    ...(input.forkServer ? ["--cap-add", "ALL"] : ["--cap-drop", "ALL"]),
    // bwrap loads the filter last, just before exec'ing the program: its own mounts are not filtered.
    ...(input.seccomp ? ["--seccomp", String(SECCOMP_FD)] : []),
    // bwrap reads it once every namespace and mount is in place, and closes it before the exec.
    ...(input.parked ? ["--block-fd", String(BLOCK_FD)] : []),
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
  if (input.forkServer) argv.push("--bind", input.forkServer.runsDir, input.forkServer.at);
  if (input.egressDir) {
    argv.push("--ro-bind", input.egressDir.dir, input.egressDir.at);
    // The CA certificates, so that Python's ssl and curl can check the hosts the run may reach.
    for (const path of CA_CERTIFICATE_DIRS) if (existsSync(path)) argv.push("--ro-bind", realpathSync(path), path);
  }

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

/** bwrap arguments for /etc: only what the C library, Python and Node read at start. */
function minimalEtc(supportDir: string): string[] {
  const args = ["--dir", "/etc"];
  for (const { source, target } of sandboxEtcFiles(supportDir)) args.push("--ro-bind", source, target);
  return args;
}

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
