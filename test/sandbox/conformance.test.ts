import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

import { createSandbox } from "../../src/sandbox/index.js";
import { type ConformanceOptions, describeSandboxConformance } from "../../src/testing/index.js";
import { type BackendKind, backendMissing } from "../helpers/backends.js";
import { TEST_CONTAINER_IMAGE } from "../helpers/container-engine.js";
import { forkedPythonRunsSandbox } from "../helpers/forked-runs.js";
import { ownerCommand } from "../helpers/owner-harness.js";

/** Small enough that the limit cases are quick, the same for every backend. */
const limits = { memoryMb: 256, cpuSeconds: 2, maxProcesses: 32 };

const BACKENDS: Record<BackendKind, () => ReturnType<typeof createSandbox>> = {
  process: () => createSandbox({ kind: "process", limits }),
  // Its Python runs forked from the fork server (bwrap's pre-warmed runs); JavaScript's and the
  // egress cases' start cold, and the hostile suite covers the parked cold runs.
  bwrap: () => forkedPythonRunsSandbox({ limits }),
  // gVisor traps every system call: its cases take several times longer.
  gvisor: () => createSandbox({ kind: "gvisor", limits }),
  container: () => createSandbox({ kind: "container", limits, container: { image: TEST_CONTAINER_IMAGE } }),
};

/** How each backend gives allowHosts, written down: the egress cases check it and what it promises. */
const EGRESS: Record<BackendKind, ConformanceOptions["egress"]> = {
  process: "offered",
  bwrap: "enforced",
  gvisor: "enforced",
  container: "enforced",
};

/** What each backend cannot do, written down: each gap is asserted as a failure by the suite. */
const GAPS: Record<BackendKind, ConformanceOptions["gaps"]> = {
  process: {},
  bwrap: {},
  gvisor: {},
  container: {
    "javascript ES module syntax":
      "the test image's Node 18 (Debian bookworm) has no module syntax detection: main.js runs as CommonJS",
  },
};

// Every backend of ours proves the contract, owner death included (hosted by test/helpers/sandbox-owner.ts);
// one missing here fails under its SELFHEAL_TEST_REQUIRE_* flag. The hostile cases run in
// test/sandbox/hostile*.test.ts.
for (const [kind, make] of Object.entries(BACKENDS) as [BackendKind, () => ReturnType<typeof createSandbox>][]) {
  const missing = backendMissing(kind);
  if (missing !== null) {
    describe.skip(`the sandbox contract: ${kind} (skipped: ${missing})`, () => {
      it("passes the conformance suite", () => undefined);
    });
  } else {
    describeSandboxConformance(kind, make, {
      runner: { describe, it, expect, beforeAll, afterAll, afterEach },
      limits,
      testTimeoutMs: kind === "gvisor" ? 120_000 : 60_000,
      gaps: GAPS[kind],
      egress: EGRESS[kind],
      owner: ownerCommand(kind === "bwrap" ? "bwrap-forked" : kind),
    });
  }
}
