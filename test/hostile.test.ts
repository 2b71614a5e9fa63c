import { createSandbox, probeBwrap } from "../src/sandbox/index.js";
import { describeHostileSuite, PROCESS_BACKEND_GAPS } from "./hostile-suite.js";

const MAX_PROCESSES = 32;
const limits = { maxProcesses: MAX_PROCESSES, memoryMb: 256 };

// The default backend is whatever `auto` picks here: bwrap in CI, where .ci/run installs it.
// Should it fall back to the process backend, the suite says so and holds it to that backend's gaps.
const defaultKind = probeBwrap().usable ? "bwrap" : "process";

describeHostileSuite(`hostile code against the default backend (${defaultKind})`, {
  createSandbox: () => createSandbox({ limits }),
  maxProcesses: MAX_PROCESSES,
  ...(defaultKind === "process" ? { uncontained: PROCESS_BACKEND_GAPS } : {}),
});
