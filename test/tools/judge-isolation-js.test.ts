import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createAgent, type Sandbox } from "../../src/index.js";
import { BACKENDS, type BackendKind, backendMissing } from "../helpers/backends.js";
import { isRoot } from "../helpers/capabilities.js";
import { fence, scriptedModel } from "../helpers/helpers.js";
import { JS_ADD_TESTS, JS_ATTACKS, JS_RIGHT_PROGRAMS } from "../helpers/judge-attacks-js.js";
import { scratchDir } from "../helpers/scratch.js";

/**
 * The JavaScript half of "a pass is a proof" (test/tools/judge-isolation.test.ts is the Python one): with
 * the tests in a process of their own (the default), no program of test/helpers/judge-attacks-js.ts, each
 * wrong and each written to win against its judge, is judged passed by the agent on any backend;
 * and right programs using what JavaScript tests reasonably use pass. (The benchmark's datasets are
 * Python: its judge has no JavaScript to run.)
 */

/**
 * What a backend cannot stop, per backend and environment: on the process backend a program
 * running as root holds CAP_SYS_PTRACE and reads any process's memory, the test process's too.
 */
function expectedEscapes(kind: BackendKind): string[] {
  if (kind === "process" && isRoot)
    return ["the tests' text, from the memory of any process it can open through /proc"];
  return [];
}

/** Attacks fail fast or at this deadline; either way they fail. */
const TIMEOUT_MS = 10_000;
/**
 * A right program must pass however busy the machine is: two Node processes in a fresh container
 * took 2 s each here under load and ran past 10 s once on a busy CI machine. Its time is not what
 * these tests check.
 */
const RIGHT_PROGRAM_TIMEOUT_MS = 120_000;

/** Runs the program alone in a fresh Node (no tests anywhere near it) and says whether `wrongBecause` holds. */
function checkedWrong(program: string, wrongBecause: string): string {
  const dir = scratchDir("judge-checker-js");
  const file = join(dir, "program.js");
  writeFileSync(
    file,
    `${program}\n;(async () => {\n  let wrong;\n  try {\n    wrong = Boolean(await (async () => (${wrongBecause}))());\n  } catch {\n    wrong = true;\n  }\n  require("node:fs").writeSync(1, wrong ? "WRONG" : "RIGHT");\n  process.exit(0);\n})();\n`,
  );
  // Through a shell that stays its parent: a program that signals its parent signals the shell,
  // never this test worker.
  const run = spawnSync("sh", ["-c", '"$0" "$1"; exit $?', process.execPath, file], {
    cwd: dir,
    input: "",
    encoding: "utf8",
    timeout: 20_000,
    killSignal: "SIGKILL",
  });
  // A program that ends its process instead of answering is wrong too, and says nothing.
  return run.stdout === "" ? "ENDED" : run.stdout;
}

describe("every JavaScript attack's program is wrong, checked alone in a fresh Node", () => {
  for (const attack of JS_ATTACKS) {
    it(`${attack.family}: ${attack.name}`, () => {
      expect(["WRONG", "ENDED"]).toContain(checkedWrong(attack.program, attack.wrongBecause));
    });
  }
});

for (const backend of BACKENDS) {
  const missing = backendMissing(backend.kind);
  describe.skipIf(missing !== null)(
    `the JavaScript judge on the ${backend.kind} backend${missing ? `: skipped, ${missing}` : ""}`,
    () => {
      const sandbox: Sandbox | undefined = missing === null ? backend.make() : undefined;
      afterAll(() => sandbox?.close());
      const escapes = expectedEscapes(backend.kind);
      const judge = (program: string, tests: string, timeoutMs = TIMEOUT_MS) =>
        createAgent({ model: scriptedModel(fence(program, "javascript")), sandbox: sandbox! }).invoke(
          { task: "Write the function the tests call.", language: "javascript", tests },
          { context: { maxAttempts: 1, timeoutMs } },
        );

      for (const attack of JS_ATTACKS) {
        const escapes_ = escapes.includes(attack.name);
        it(`${escapes_ ? "lets through, as listed for this backend," : "fails"} ${attack.family}: ${attack.name}`, async () => {
          const agent = await judge(attack.program, attack.tests ?? JS_ADD_TESTS);
          expect(agent.lastRun?.testIsolation).toBe("process");
          expect(agent.status).toBe(escapes_ ? "passed" : "failed");
        });
      }

      for (const right of JS_RIGHT_PROGRAMS) {
        it(`passes a right program: ${right.name}`, async () => {
          const agent = await judge(right.program, right.tests, RIGHT_PROGRAM_TIMEOUT_MS);
          // One object, so that a failure shows how the run ended, not only that it failed.
          const { status, exitCode, signal, stderr, testIsolation, testsCompleted } = agent.lastRun ?? {};
          expect({ verdict: agent.status, status, exitCode, signal, stderr, testIsolation, testsCompleted }).toEqual({
            verdict: "passed",
            status: "ok",
            exitCode: 0,
            signal: null,
            stderr: "",
            testIsolation: "process",
            testsCompleted: true,
          });
        });
      }
    },
  );
}
