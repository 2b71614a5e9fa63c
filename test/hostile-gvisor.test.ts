import { describe, it } from "vitest";

import { createSandbox, probeGvisor } from "../src/sandbox/index.js";
import { describeHostileSuite, isolationGaps } from "./hostile-suite.js";

const MAX_PROCESSES = 32;
const limits = { maxProcesses: MAX_PROCESSES, memoryMb: 256, cpuSeconds: 2 };

const missing = probeGvisor();

if (missing !== null) {
  describe.skip(`hostile code against the gvisor backend: skipped, ${missing}`, () => {
    it("contains every hostile case", () => undefined);
  });
} else {
  describeHostileSuite("hostile code against the gvisor backend", {
    createSandbox: () => createSandbox({ kind: "gvisor", limits }),
    kind: "gvisor",
    maxProcesses: MAX_PROCESSES,
    memoryMb: limits.memoryMb,
    cpuSeconds: limits.cpuSeconds,
    uncontained: {
      ...isolationGaps(createSandbox({ kind: "gvisor", limits }).describe()),
      // The case expects the host kernel's refusal (EPERM); gVisor answers these calls itself.
      "denied system calls":
        "gVisor's own kernel implements ptrace, unshare and io_uring_setup, so they succeed inside the sandbox; " +
        "none of them reaches the host kernel",
    },
  });
}
