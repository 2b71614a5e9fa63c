import { describe, expect, it } from "vitest";
import { processIsRunning } from "../../src/core/process.js";
import { createAgent, createSandbox, parseSettings } from "../../src/index.js";
import { fence, scriptedModel } from "../helpers/helpers.js";

describe("the execution timeout", () => {
  it("kills a `while True` program and the child it started", async () => {
    const program = [
      "import subprocess, sys",
      "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])",
      "print(child.pid, flush=True)",
      "while True:",
      "    pass",
    ].join("\n");
    const model = scriptedModel(fence(program));
    const result = await createAgent({ model, sandbox: createSandbox({ kind: "process" }) }).invoke(
      { task: "Spin." },
      { context: parseSettings({ maxAttempts: 1, timeoutMs: 1500 }) },
    );
    expect(result.status).toBe("failed");
    expect(result.lastRun?.status).toBe("timeout");
    expect(result.errors[0]).toMatchObject({ type: "Timeout" });
    const childPid = Number(result.lastRun?.stdout.trim());
    expect(childPid).toBeGreaterThan(0);
    // Killed with its group at the deadline; the kernel may take a moment to reap it.
    const deadline = Date.now() + 10_000;
    while (processIsRunning(childPid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(processIsRunning(childPid)).toBe(false);
  });
});
