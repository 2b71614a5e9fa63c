import { randomInt } from "node:crypto";

import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

import { judgeAttempt } from "../../src/core/verdict.js";
import { describeFailure } from "../../src/nodes/fixer.prompt.js";
import type { SandboxKind } from "../../src/sandbox/index.js";
import type { RunResult, Sandbox, SandboxLimits } from "../../src/sandbox/types.js";
import { describeHostileSuite, type ExpectedEscapes } from "../../src/testing/index.js";
import { forkAndSleep, goneWithin, startOwner } from "./owner-harness.js";

export type { ExpectedEscapes };

export interface OurHostileSuiteOptions {
  kind: SandboxKind;
  createSandbox: () => Sandbox | Promise<Sandbox>;
  /** The limits the sandbox is created with; the cases are drawn from them. */
  limits: Pick<SandboxLimits, "memoryMb" | "cpuSeconds" | "maxProcesses">;
  /** What this backend cannot contain here, each with the reason: a literal list, never computed. */
  uncontained: ExpectedEscapes;
}

/**
 * The exported hostile-code suite (selfheal/testing) on one of our backends, with what only our
 * backends promise on top: the sentence the fixer reads at a whole-run limit, and an owner SIGKILLed
 * mid-run leaving neither the program nor anything under its run dirs (bwrap, the watchdog).
 */
export function describeOurHostileSuite(name: string, options: OurHostileSuiteOptions): void {
  const { memoryMb, cpuSeconds } = options.limits;
  describeHostileSuite(name, options.createSandbox, {
    runner: { describe, it, expect, beforeAll, afterAll, afterEach },
    limits: options.limits,
    uncontained: options.uncontained,
    inspect: {
      "memory spread over forked processes": (result) => {
        const execution = asExecution(result);
        expect(judgeAttempt({ run: execution, hasTests: false }).critique.summary).toBe("Killed at the memory limit.");
        expect(describeFailure(execution)).toContain(`together used more than ${memoryMb} MiB`);
      },
      "CPU spread over forked processes": (result) => {
        expect(result.stderr).toContain(`together used more than ${cpuSeconds} CPU seconds`);
        expect(describeFailure(asExecution(result))).toContain(`together used more than ${cpuSeconds} CPU seconds`);
      },
    },
  });

  // bubblewrap's issues #529 and #633: --die-with-parent alone does not always take the sandbox
  // down with its parent; here the owner is SIGKILLed while the program and a forked child sleep.
  describe(`hostile code: ${name}: owner SIGKILLed mid-run`, () => {
    for (const language of ["python", "javascript"] as const) {
      it(`${language === "python" ? "" : "JS "}owner SIGKILLed mid-run`, async () => {
        // Sleep seconds as the marker, under a minute: bounded should the run escape.
        const marker = `59.${randomInt(1_000_000, 9_999_999)}`;
        const owner = await startOwner(options.kind, language, forkAndSleep(language, marker));
        owner.kill("SIGKILL");
        // A deadline, not a speed target: on a loaded machine the watchdog and the kernel are slow.
        const left = await goneWithin(10_000, marker, owner.pid ?? 0);
        for (const pid of left) process.kill(pid, "SIGKILL");
        expect(left).toEqual([]);
      });
    }
  });
}

/** A run's result as the critic and the fixer read it: it ran, outside any test. */
function asExecution(result: RunResult) {
  return { ...result, ran: true, failedInTests: false, progress: null };
}
