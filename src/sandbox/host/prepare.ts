import { type BwrapProbe, findBwrapHost, probeBwrap } from "./bwrap-probe.js";
import { type CgroupSupport, cgroupsNow, prepareCgroups } from "./cgroups.js";
import { sweepDeadProcessDirsOnce } from "./temp-dirs.js";

/** What a local sandbox needs to know of this machine before its first run. */
export interface PreparedHost {
  bwrap: BwrapProbe;
  /** Where the runs' cgroups go; only looked for where bwrap can use them (it needs a shell to join them). */
  cgroups: CgroupSupport;
}

const NO_SHELL: CgroupSupport = { version: null, reason: "no sh(1) to join the run's cgroup" };

/**
 * Probes the host once per process without blocking the event loop: the sweep of temp dirs dead
 * selfheal processes left, bubblewrap (its seccomp
 * filter, the tmpfs tools, a test sandbox), then the cgroups (set-up and the sweep of dead
 * owners' groups). A sandbox awaits it before its first run; `createSandbox` starts it at once.
 */
export async function prepareHost(): Promise<PreparedHost> {
  await sweepDeadProcessDirsOnce();
  const bwrap = await findBwrapHost();
  if (!bwrap.usable || !bwrap.host.shell) return { bwrap, cgroups: NO_SHELL };
  return { bwrap, cgroups: await prepareCgroups() };
}

/**
 * `prepareHost` now, blocking: only for a question asked before preparation finished (a
 * `describe()` straight after `createSandbox`); the sweep of dead owners is left to `prepareHost`.
 */
export function hostNow(): PreparedHost {
  const bwrap = probeBwrap();
  if (!bwrap.usable || !bwrap.host.shell) return { bwrap, cgroups: NO_SHELL };
  return { bwrap, cgroups: cgroupsNow() };
}
