import { createSandbox } from "../src/sandbox/index.js";
import { describeHostileSuite, PROCESS_BACKEND_GAPS } from "./hostile-suite.js";

const MAX_PROCESSES = 32;
const limits = { maxProcesses: MAX_PROCESSES, memoryMb: 256, cpuSeconds: 2 };

describeHostileSuite("hostile code against the process backend", {
  createSandbox: () => createSandbox({ kind: "process", limits }),
  kind: "process",
  maxProcesses: MAX_PROCESSES,
  memoryMb: limits.memoryMb,
  cpuSeconds: limits.cpuSeconds,
  uncontained: PROCESS_BACKEND_GAPS,
});
