import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

import { describeSandboxConformance } from "../../src/testing/index.js";
import { ChildProcessSandbox } from "./index.js";

// A user's backend proves the contract with one call; describe() says which limits it holds.
const limits = { memoryMb: 256, cpuSeconds: 2, maxProcesses: 32 };
// An owner killed mid-run leaves its work dirs behind (no one removes them): they go in a folder of
// this file's own.
const ownerTmp = mkdtempSync(join(tmpdir(), "child-process-owner-"));
afterAll(() => rmSync(ownerTmp, { recursive: true, force: true }));
const owner = {
  command: process.execPath,
  args: ["--import", "tsx", fileURLToPath(new URL("./owner.ts", import.meta.url))],
  env: { ...process.env, TMPDIR: ownerTmp },
};

describeSandboxConformance("the child_process example", () => new ChildProcessSandbox({ limits }), {
  runner: { describe, it, expect, beforeAll, afterAll, afterEach },
  limits,
  owner,
  // Written down, never computed: each gap is asserted as the failure it causes.
  gaps: {
    "owner SIGKILLed mid-run": "a plain child process group outlives its owner: nothing watches for the owner's death",
  },
});
