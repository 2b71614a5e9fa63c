import { spawnSync } from "node:child_process";
import { closeSync, mkdirSync, openSync, rmdirSync } from "node:fs";
import { join } from "node:path";

import { getSupportDir } from "./bootstrap.js";
import { buildBwrapArgv } from "./bwrap-argv.js";
import { findOnPath } from "./interpreters.js";
import { type SeccompFilter, seccompFilter } from "./seccomp.js";
import { HOST_UID_BASE } from "./uids.js";

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
