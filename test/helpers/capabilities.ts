import { spawnSync } from "node:child_process";
import { accessSync, constants, existsSync, readFileSync, statfsSync } from "node:fs";
import { join } from "node:path";

import { probeBwrap, probeGvisor } from "../../src/sandbox/index.js";

/**
 * What the tests need of the machine beyond Node and Python. `.ci/run` installs each of these and
 * sets its flag to 1; under a flag a missing capability fails the tests that need it, where a
 * developer's machine without it skips them with the reason in the test's title.
 */
export const REQUIRE_FLAGS = {
  bwrap: "SELFHEAL_TEST_REQUIRE_BWRAP",
  cgroups: "SELFHEAL_TEST_REQUIRE_CGROUPS",
  seccomp: "SELFHEAL_TEST_REQUIRE_SECCOMP",
  gvisor: "SELFHEAL_TEST_REQUIRE_GVISOR",
  docker: "SELFHEAL_TEST_REQUIRE_DOCKER",
  postgres: "SELFHEAL_TEST_REQUIRE_POSTGRES",
  chromium: "SELFHEAL_TEST_REQUIRE_CHROMIUM",
} as const;

export type Capability = keyof typeof REQUIRE_FLAGS;

/** Whether CI demands this capability here (its flag is 1). */
export function isRequired(capability: Capability): boolean {
  return process.env[REQUIRE_FLAGS[capability]] === "1";
}

/**
 * `missing` (why the capability is absent, or null) as the reason to skip, or a thrown error
 * when the capability's flag requires it: the test file then fails instead of skipping.
 */
export function skipReason(capability: Capability, missing: string | null): string | null {
  if (missing !== null && isRequired(capability)) {
    throw new Error(`${REQUIRE_FLAGS[capability]}=1 but the tests that need ${capability} cannot run: ${missing}`);
  }
  return missing;
}

export const isRoot = process.getuid?.() === 0;

/** Why bubblewrap cannot sandbox a run here, or null. */
export function bwrapMissing(): string | null {
  const probe = probeBwrap();
  return skipReason("bwrap", probe.usable ? null : probe.reason);
}

/** Why runsc cannot run here, or null. */
export function gvisorMissing(): string | null {
  return skipReason("gvisor", probeGvisor());
}

/**
 * Why a sandbox cannot give a run cgroups of its own here, or null, found by the test itself
 * rather than by the sandbox's own detection (which is under test): as root, cgroup v1 memory,
 * pids and cpuacct hierarchies (this machine and CI), or a cgroup v2 group of this process with
 * the memory and pids controllers that this user may write (a systemd delegation).
 */
export function cgroupsMissing(root = "/sys/fs/cgroup"): string | null {
  return skipReason("cgroups", whyNoCgroups(root));
}

function whyNoCgroups(root: string): string | null {
  if (process.platform !== "linux") return "cgroups are Linux's";
  const CGROUP2_SUPER_MAGIC = 0x63677270;
  if (existsSync(root) && statfsSync(root).type === CGROUP2_SUPER_MAGIC) {
    const own = /^0::(.*)$/m.exec(readFileSync("/proc/self/cgroup", "utf8"))?.[1] ?? "/";
    const group = join(root, own);
    const controllers = readFileSync(join(group, "cgroup.controllers"), "utf8").split(/\s+/);
    if (!controllers.includes("memory") || !controllers.includes("pids")) {
      return `this process's cgroup v2 group ${group} has no memory and pids controllers (no delegation)`;
    }
    try {
      accessSync(join(group, "cgroup.subtree_control"), constants.W_OK);
      return null;
    } catch {
      return `this user may not write ${group} (no delegation)`;
    }
  }
  if (!isRoot) return "not root: on cgroup v1 only root may make a run's cgroups";
  const absent = ["memory", "pids", "cpuacct"].filter((hierarchy) => !existsSync(join(root, hierarchy, "tasks")));
  return absent.length === 0 ? null : `no cgroup v1 ${absent.join(", ")} hierarchy under ${root}`;
}

/**
 * Why the seccomp filter cannot be built here, or null: the sandbox builds it with libseccomp's
 * binding in Debian's own python3 (python3-seccomp), which is what this checks, on its own.
 */
export function seccompMissing(): string | null {
  const probe = spawnSync("/usr/bin/python3", ["-c", "import seccomp"], { stdio: "ignore", timeout: 20_000 });
  return skipReason("seccomp", probe.status === 0 ? null : "/usr/bin/python3 cannot import seccomp (python3-seccomp)");
}

/** Why the PostgreSQL tests cannot run: `.ci/run` starts a cluster and exports its URL as SELFHEAL_TEST_POSTGRES_URL. */
export function postgresMissing(): string | null {
  const url = process.env.SELFHEAL_TEST_POSTGRES_URL;
  return skipReason(
    "postgres",
    url ? null : "SELFHEAL_TEST_POSTGRES_URL is not set (.ci/run shows how CI starts PostgreSQL)",
  );
}
