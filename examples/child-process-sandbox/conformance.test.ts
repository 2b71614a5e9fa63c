import { describeSandboxConformance } from "../../src/testing/index.js";
import { ChildProcessSandbox } from "./index.js";

// A user's backend proves the contract with one call; describe() says which limits it holds.
const limits = { memoryMb: 256, cpuSeconds: 2, maxProcesses: 32 };
describeSandboxConformance("the child_process example", () => new ChildProcessSandbox({ limits }), { limits });
