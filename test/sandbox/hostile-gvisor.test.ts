import { describe, it } from "vitest";

import { createSandbox } from "../../src/sandbox/index.js";
import { gvisorMissing, isRoot } from "../helpers/capabilities.js";
import { describeOurHostileSuite, type ExpectedEscapes } from "../helpers/hostile-suite.js";

const limits = { maxProcesses: 32, memoryMb: 256, cpuSeconds: 2 };

/** What gVisor cannot contain anywhere: its limits are rlimits, held per process by its own kernel. */
const ALWAYS: ExpectedEscapes = {
  "memory spread over forked processes": "RLIMIT_AS holds per process only, in gVisor's kernel",
  "CPU spread over forked processes": "RLIMIT_CPU holds per process only, in gVisor's kernel",
  // The case expects the host kernel's refusal (EPERM); gVisor answers these calls itself.
  "denied system calls":
    "gVisor's own kernel implements ptrace and unshare, so they succeed inside the sandbox; none of them reaches the host kernel",
};
/** Only root may mount the run's tmpfs (this machine and CI run as root); without it the work dir is a host dir. */
const WITHOUT_ROOT: ExpectedEscapes = {
  "disk fill in many small files": "not root, so no tmpfs for the run: RLIMIT_FSIZE holds per file only",
  "inode fill in /tmp": "not root, so no tmpfs for the run",
};

const missing = gvisorMissing();

if (missing !== null) {
  describe.skip(`hostile code: the gvisor backend: skipped, ${missing}`, () => {
    it("contains every hostile case", () => undefined);
  });
} else {
  describeOurHostileSuite("the gvisor backend", {
    createSandbox: () => createSandbox({ kind: "gvisor", limits }),
    kind: "gvisor",
    limits,
    uncontained: { ...ALWAYS, ...(isRoot ? {} : WITHOUT_ROOT) },
  });
}
