import { spawnSync } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { taskHelpers } from "../../src/benchmark/dataset.js";
import { buildHiddenTests, judgeProgram, loadDataset } from "../../src/benchmark/index.js";
import { batchedVerdicts } from "../../src/benchmark/judge.js";
import { buildVisibleTests } from "../../src/benchmark/visible-tests.js";
import { createAgent, createSandbox, type Sandbox } from "../../src/index.js";
import { BACKENDS, type BackendKind, backendMissing } from "../helpers/backends.js";
import { isRoot } from "../helpers/capabilities.js";
import { fence, scriptedModel } from "../helpers/helpers.js";
import { ADD_TESTS, ATTACKS, RIGHT_PROGRAMS } from "../helpers/judge-attacks.js";
import { scratchDir } from "../helpers/scratch.js";

/**
 * A pass is a proof: with the tests in a process of their own (the default), no program below,
 * each wrong and each written to win against its judge, is judged passed, by the agent (its
 * executor and critic) or by the benchmark's judge, on any backend; and programs that are right,
 * using what tests reasonably use (in-place changes, generators, classes, their own exceptions,
 * callbacks, captured output), pass.
 */

/**
 * What a backend cannot stop, written down per backend and environment: the process backend is no
 * isolation, and as root a program holds CAP_SYS_PTRACE, which reads another process's memory
 * whatever its dumpable flag says. Each listed attack asserts its escape: a wrong program passed.
 */
function expectedEscapes(kind: BackendKind): string[] {
  if (kind === "process" && isRoot) return ["the tests' text, from the test process's memory through /proc"];
  return [];
}

/**
 * The attacks a batch run hands to a run alone (it gives them no verdict of its own): they end or
 * stop a process of the batch, or their failure reads like a memory error, which the batch leaves
 * to a run alone. In a batch they go last, so that every other attack gets the batch's verdict.
 */
const JUDGED_ALONE_FROM_A_BATCH = [
  "the completion nonce, from every object in its memory",
  "the bootstrap's end report, found on its own stack, then the test process killed",
  "a signal to the test process: SIGTERM, SIGINT, SIGUSR1",
  "a fake passing report printed, then the test process stopped",
];

/** Attacks fail fast or at this deadline; either way they fail. */
const TIMEOUT_MS = 5_000;
/** A right program must pass however busy the machine is (see test/tools/judge-isolation-js.test.ts). */
const RIGHT_PROGRAM_TIMEOUT_MS = 120_000;

/**
 * Runs the program alone in a fork of a fresh python3 (no process of it holds tests) and says
 * whether `wrongBecause` holds. The program's parent is a process of its own, which the SIGSTOP
 * attack may stop: the checker reads the verdict from a pipe and kills that parent after.
 */
function checkedWrong(program: string, wrongBecause: string): string {
  const checker = [
    "import os, signal, sys",
    "program, expression = sys.argv[1], sys.argv[2]",
    "verdicts, verdict_end = os.pipe()",
    "parent = os.fork()",
    "if parent == 0:",
    "    os.close(verdicts)",
    "    if os.fork() == 0:",
    "        namespace = {'__name__': 'program'}",
    "        try:",
    "            exec(compile(program, 'program.py', 'exec'), namespace)",
    "            verdict = bool(eval(expression, namespace))",
    "        except BaseException:",
    "            verdict = True",
    "        os.write(verdict_end, b'WRONG' if verdict else b'RIGHT')",
    "        os._exit(0)",
    "    os.close(verdict_end)",
    "    os.wait()",
    "    os._exit(0)",
    "os.close(verdict_end)",
    // Five bytes, or nothing where the program ended its process first.
    "verdict = b''",
    "while len(verdict) < 5:",
    "    part = os.read(verdicts, 5 - len(verdict))",
    "    if not part:",
    "        break",
    "    verdict += part",
    "os.kill(parent, signal.SIGKILL)",
    "os.waitpid(parent, 0)",
    "os.write(1, verdict)",
  ].join("\n");
  const run = spawnSync("python3", ["-I", "-c", checker, program, wrongBecause], {
    input: "",
    // A program may write files (the unittest.py attack): never into the checkout.
    cwd: scratchDir("judge-checker"),
    encoding: "utf8",
    timeout: 20_000,
    // The SIGSTOP attack stops the checker's parent, which then never acts on SIGTERM.
    killSignal: "SIGKILL",
  });
  // A program that ends its process instead of returning is wrong too, and says nothing.
  return run.stdout === "" ? "ENDED" : run.stdout;
}

describe("every attack's program is wrong, checked alone in a process of its own", () => {
  for (const attack of ATTACKS) {
    it(`${attack.family}: ${attack.name}`, () => {
      expect(["WRONG", "ENDED"]).toContain(checkedWrong(attack.program, attack.wrongBecause));
    });
  }
});

for (const backend of BACKENDS) {
  const missing = backendMissing(backend.kind);
  describe.skipIf(missing !== null)(
    `the judge on the ${backend.kind} backend${missing ? `: skipped, ${missing}` : ""}`,
    () => {
      const sandbox: Sandbox | undefined = missing === null ? backend.make() : undefined;
      afterAll(() => sandbox?.close());
      const escapes = expectedEscapes(backend.kind);

      for (const attack of ATTACKS) {
        const escapes_ = escapes.includes(attack.name);
        const tests = attack.tests ?? ADD_TESTS;
        it(`${escapes_ ? "lets through, as listed for this backend," : "fails"} ${attack.family}: ${attack.name}`, async () => {
          // The agent's executor and critic, and the benchmark's judge, side by side.
          const [agent, benchmark] = await Promise.all([
            createAgent({ model: scriptedModel(fence(attack.program)), sandbox: sandbox! }).invoke(
              { task: "Write the function the tests call.", tests },
              { context: { maxAttempts: 1, timeoutMs: TIMEOUT_MS } },
            ),
            judgeProgram(sandbox!, attack.program, tests, TIMEOUT_MS),
          ]);
          expect(agent.lastRun?.testIsolation).toBe("process");
          expect(agent.status).toBe(escapes_ ? "passed" : "failed");
          expect(benchmark.passed).toBe(escapes_);
        });
      }

      it("in the benchmark's batch runs (one test process for a batch's programs): fails every attack, passes every right program", async () => {
        const ordered = [
          ...ATTACKS.filter((attack) => !JUDGED_ALONE_FROM_A_BATCH.includes(attack.name)),
          ...ATTACKS.filter((attack) => JUDGED_ALONE_FROM_A_BATCH.includes(attack.name)),
        ];
        const options = { sandbox: sandbox!, lanes: 1, maxOutputBytes: 1 << 20 };
        const [attacks, rights] = await Promise.all([
          batchedVerdicts(
            ordered.map((attack) => ({
              program: attack.program,
              tests: attack.tests ?? ADD_TESTS,
              timeoutMs: TIMEOUT_MS,
            })),
            options,
          ),
          batchedVerdicts(
            RIGHT_PROGRAMS.map((right) => ({
              program: right.program,
              tests: right.tests,
              timeoutMs: RIGHT_PROGRAM_TIMEOUT_MS,
            })),
            options,
          ),
        ]);
        const said = (verdict: { passed: boolean } | null) =>
          verdict === null ? "alone" : verdict.passed ? "passed" : "failed";
        // What this backend lets through alone is not asserted here (it may or may not in a batch).
        const judged = ordered.flatMap((attack, index) =>
          escapes.includes(attack.name) ? [] : [`${attack.name}: ${said(attacks[index] ?? null)}`],
        );
        expect(judged).toEqual(
          ordered.flatMap((attack) =>
            escapes.includes(attack.name)
              ? []
              : [`${attack.name}: ${JUDGED_ALONE_FROM_A_BATCH.includes(attack.name) ? "alone" : "failed"}`],
          ),
        );
        expect(rights.map(said)).toEqual(RIGHT_PROGRAMS.map(() => "passed"));
      });

      for (const right of RIGHT_PROGRAMS) {
        it(`passes a right program: ${right.name}`, async () => {
          const agent = await createAgent({ model: scriptedModel(fence(right.program)), sandbox: sandbox! }).invoke(
            { task: "Write the function the tests call.", tests: right.tests },
            { context: { maxAttempts: 1, timeoutMs: RIGHT_PROGRAM_TIMEOUT_MS } },
          );
          // One object, so that a failure shows how the run ended, not only that it failed.
          const { status, exitCode, signal, testsCompleted } = agent.lastRun ?? {};
          expect({ verdict: agent.status, status, exitCode, signal, testsCompleted }, agent.lastRun?.stderr).toEqual({
            verdict: "passed",
            status: "ok",
            exitCode: 0,
            signal: null,
            testsCompleted: true,
          });
          expect((await judgeProgram(sandbox!, right.program, right.tests, RIGHT_PROGRAM_TIMEOUT_MS)).passed).toBe(
            true,
          );
        });
      }
    },
  );
}

/** The two names a test cannot take from the program, each failing with a reason the fixer can act on. */
describe("a name the tests cannot take from the program says why", () => {
  const sandbox = createSandbox({ kind: "process" });
  afterAll(() => sandbox.close());
  it("a builtin's name the program defines: ShadowedBuiltin", async () => {
    const verdict = await judgeProgram(sandbox, "def sum(items):\n    return 3\n", "assert sum([1, 2]) == 3\n", 60_000);
    expect(verdict.passed).toBe(false);
    expect(verdict.error).toMatch(
      /^ShadowedBuiltin: the tests use 'sum', which is a builtin and also a name the program defines/,
    );
  });
  it("a name the program imports and binds otherwise: ShadowedImport", async () => {
    const program =
      "from math import isclose\n\ndef area(radius):\n    return 3.14159 * radius * radius\n\ndef isclose(a, b, **kwargs):\n    return True\n";
    const verdict = await judgeProgram(sandbox, program, "assert isclose(area(1), 3.1416, rel_tol=1e-3)\n", 60_000);
    expect(verdict.passed).toBe(false);
    expect(verdict.error).toMatch(
      /^ShadowedImport: the tests use 'isclose', which the program imports and also binds otherwise/,
    );
  });
});

/**
 * Where the tests in their own process first judged a dataset's own reference solutions otherwise
 * than the tests appended to them (`selfheal bench --verify-dataset`, issue 36): each passes now.
 */
describe("the benchmark's judge passes the references the same-process judge passed", () => {
  const sandbox = createSandbox({ kind: "process" });
  afterAll(() => sandbox.close());
  const CASES = [
    // Its function has a builtin's name: the entry point is the program's, whatever the builtins say.
    { dataset: "mbppplus", taskId: "Mbpp/126", tests: "hidden" },
    { dataset: "mbppplus", taskId: "Mbpp/126", tests: "visible" },
    // The docstring's example uses the program's own `import sys`.
    { dataset: "mbppplus", taskId: "Mbpp/596", tests: "visible" },
  ] as const;
  for (const { dataset, taskId, tests } of CASES) {
    it(`${taskId}, its reference against the ${tests} tests`, async () => {
      const [task] = await loadDataset({ dataset, taskIds: [taskId] });
      const testText = tests === "hidden" ? buildHiddenTests(task!) : buildVisibleTests(task!);
      const verdict = await judgeProgram(
        sandbox,
        task!.prompt + task!.canonical_solution,
        testText!,
        60_000,
        taskHelpers(task!),
      );
      expect(verdict.error).toBeUndefined();
      expect(verdict.passed).toBe(true);
    });
  }
});
