import { createSandbox, probeBwrap } from "../src/sandbox/index.js";
import { describeHostileSuite, isolationGaps, PROCESS_BACKEND_GAPS } from "./hostile-suite.js";

const MAX_PROCESSES = 32;
const limits = { maxProcesses: MAX_PROCESSES, memoryMb: 256, cpuSeconds: 2 };

// The default backend is whatever `auto` picks here: bwrap in CI, where .ci/run installs it.
// Should it fall back to the process backend, the suite says so and holds it to that backend's gaps.
const defaultKind = probeBwrap().usable ? "bwrap" : "process";
// The whole-run limits (cgroups, a tmpfs, seccomp) need root or a delegated cgroup; what this machine
// lacks, the sandbox says in describe(), and those cases then run as expected failures.
const isolation = createSandbox({ limits, prewarm: false }).describe();

describeHostileSuite(`hostile code against the default backend (${defaultKind})`, {
  createSandbox: () => createSandbox({ limits }),
  kind: defaultKind,
  maxProcesses: MAX_PROCESSES,
  memoryMb: limits.memoryMb,
  cpuSeconds: limits.cpuSeconds,
  uncontained: defaultKind === "process" ? PROCESS_BACKEND_GAPS : isolationGaps(isolation),
});
