import { mkdirSync, rmdirSync } from "node:fs";
import { join } from "node:path";

import { getSupportDir } from "./bootstrap.js";
import { type BwrapHost, buildBwrapArgv } from "./bwrap-argv.js";

export type { BwrapHost };

import { type HostSteps, runSteps, runStepsSync } from "./host-commands.js";
import { findOnPath } from "./interpreters.js";
import { seccompFilterSteps } from "./seccomp.js";
import { HOST_UID_BASE } from "./uids.js";

export type BwrapProbe = { usable: true; host: BwrapHost } | { usable: false; reason: string };

let probeResult: BwrapProbe | undefined;
let probing: Promise<BwrapProbe> | undefined;

/**
 * Checks once per process that bubblewrap exists and can create its namespaces here (it cannot in
 * many containers, or where unprivileged user namespaces are disabled), by running `true` in a
 * sandbox built exactly as a real run's. Blocks while it runs; `findBwrapHost` does not.
 */
export function probeBwrap(options: { path?: string } = {}): BwrapProbe {
  // Only the real PATH is cached; another search path is a what-if question (tests ask it).
  if (options.path !== undefined) return runStepsSync(bwrapProbeSteps(options.path));
  probeResult ??= runStepsSync(bwrapProbeSteps(process.env.PATH ?? ""));
  return probeResult;
}

/** `probeBwrap()` without blocking the event loop: what a sandbox awaits before its first run. */
export function findBwrapHost(): Promise<BwrapProbe> {
  if (probeResult) return Promise.resolve(probeResult);
  probing ??= runSteps(bwrapProbeSteps(process.env.PATH ?? "")).then((found) => {
    probeResult ??= found;
    return probeResult;
  });
  return probing;
}

function* bwrapProbeSteps(searchPath: string): HostSteps<BwrapProbe> {
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
    seccomp: yield* seccompFilterSteps(),
    tmpfs: yield* tmpfsSteps(isRoot, searchPath),
    shell: findOnPath("sh", searchPath),
  };
  const trueCommand = findOnPath("true", searchPath) ?? "/bin/true";
  const probeDir = join(getSupportDir(), "probe-work");
  mkdirSync(probeDir, { recursive: true });
  const [file = "", ...args] = buildBwrapArgv({
    host,
    hostUid: isRoot ? HOST_UID_BASE : null,
    workDir: probeDir,
    supportDir: getSupportDir(),
    prefixes: [],
    command: [trueCommand],
    seccomp: host.seccomp.usable,
  });
  const probe = yield { file, args, env: {}, timeoutMs: 10_000, fd4: host.seccomp.usable ? host.seccomp.path : null };
  if (probe.status === 0) return { usable: true, host };
  const detail = probe.error ?? probe.stderr.trim();
  return {
    usable: false,
    reason: `bubblewrap is installed but cannot create a sandbox here: ${detail || `exit ${probe.status}`}`,
  };
}

/**
 * Whether a tmpfs per run can be mounted here: only root may, and a container may forbid even
 * that, so one is mounted and unmounted to find out. Blocks; `findTmpfsTools` does not.
 */
export function probeTmpfs(isRoot: boolean, searchPath: string): BwrapHost["tmpfs"] {
  return runStepsSync(tmpfsSteps(isRoot, searchPath));
}

export function findTmpfsTools(isRoot: boolean, searchPath: string): Promise<BwrapHost["tmpfs"]> {
  return runSteps(tmpfsSteps(isRoot, searchPath));
}

function* tmpfsSteps(isRoot: boolean, searchPath: string): HostSteps<BwrapHost["tmpfs"]> {
  if (!isRoot) return { reason: "only root can mount a tmpfs per run" };
  const mount = findOnPath("mount", searchPath);
  const umount = findOnPath("umount", searchPath);
  if (!mount || !umount) return { reason: "mount(8) and umount(8) (util-linux) are needed to mount a tmpfs per run" };
  // One mount point per probe: the sync and the async probe may be under way at once.
  const point = join(getSupportDir(), `probe-tmpfs-${++tmpfsProbes}`);
  mkdirSync(point, { recursive: true });
  const mounted = yield {
    file: mount,
    args: ["-t", "tmpfs", "-o", "size=1m,nr_inodes=16", "selfheal-probe", point],
    timeoutMs: 10_000,
  };
  if (mounted.status !== 0)
    return { reason: `cannot mount a tmpfs here: ${mounted.stderr.trim() || `exit ${mounted.status}`}` };
  yield { file: umount, args: [point], timeoutMs: 10_000 };
  rmdirSync(point);
  return { mount, umount };
}

let tmpfsProbes = 0;
