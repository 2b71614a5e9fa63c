import { describe, it } from "vitest";

import { createSandbox } from "../../src/sandbox/index.js";
import { bwrapMissing, cgroupsMissing, isRoot, seccompMissing } from "../helpers/capabilities.js";
import { forkedPythonRunsSandbox } from "../helpers/forked-runs.js";
import { describeOurHostileSuite, type ExpectedEscapes } from "../helpers/hostile-suite.js";

const limits = { maxProcesses: 32, memoryMb: 256, cpuSeconds: 2 };

/**
 * What bwrap cannot contain, per environment. As root with cgroup v1 and python3-seccomp (this
 * machine, CI: .ci/run requires all three) it contains every case. What this machine offers is found
 * by the checks in capabilities.ts, never by asking the sandbox: a sandbox whose detection misses a
 * cgroup, a tmpfs or the filter fails the cases below instead of turning them into expected escapes.
 */
const WITHOUT_CGROUPS: ExpectedEscapes = {
  "memory spread over forked processes": "no cgroup for the run: RLIMIT_AS holds per process only",
  "CPU spread over forked processes": "no cgroup for the run: RLIMIT_CPU holds per process only",
};
/** Only root may mount the run's tmpfs; without it the work dir is a host dir. */
const WITHOUT_ROOT: ExpectedEscapes = {
  "disk fill in many small files": "not root, so no tmpfs for the run: RLIMIT_FSIZE holds per file only",
  "inode fill in /tmp": "not root, so no tmpfs for the run: /tmp's tmpfs is bounded in bytes, not inodes",
};
const WITHOUT_SECCOMP: ExpectedEscapes = {
  "denied system calls": "no python3-seccomp to build the filter: namespaces and dropped capabilities only",
};

const bwrap = bwrapMissing();

if (bwrap !== null) {
  describe.skip(`hostile code: the bwrap backend: skipped, ${bwrap}`, () => {
    it("contains every hostile case", () => undefined);
  });
} else {
  const uncontained: ExpectedEscapes = {
    ...(cgroupsMissing() === null ? {} : WITHOUT_CGROUPS),
    ...(isRoot ? {} : WITHOUT_ROOT),
    ...(seccompMissing() === null ? {} : WITHOUT_SECCOMP),
  };
  // Every Python case here runs in a process forked from the fork server.
  describeOurHostileSuite("the bwrap backend, Python runs forked from its fork server", {
    createSandbox: () => forkedPythonRunsSandbox({ limits }),
    kind: "bwrap",
    limits,
    uncontained,
  });
  // Without a pool, every run after the first starts in a sandbox made ahead of it and parked
  // (docs/security.md, "Sandboxes made ahead of a cold run"): the same cases must hold there.
  describeOurHostileSuite("the bwrap backend without a pool, in sandboxes made ahead", {
    createSandbox: () => createSandbox({ kind: "bwrap", limits, prewarm: false, forkServer: false }),
    kind: "bwrap",
    limits,
    uncontained,
  });
}
