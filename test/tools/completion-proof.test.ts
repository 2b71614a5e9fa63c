import { afterAll, describe, expect, it } from "vitest";
import {
  assembleProgram,
  createAgent,
  createSandbox,
  findExitCalls,
  type Language,
  settleCompletion,
  TEST_ISOLATIONS,
  TESTS_NOT_FINISHED,
} from "../../src/internal.js";
import { BACKENDS, backendMissing } from "../helpers/backends.js";
import { fence, scriptedModel } from "../helpers/helpers.js";

/**
 * A pass is a proof: with acceptance tests, a run passes only when the mark written after the last
 * test came back from that run. Each program below has a wrong `add` (or `isEven`) and ends the
 * process before its failing tests can say so; on main before the completion mark all of them
 * ended `passed`.
 */
interface EarlyExit {
  name: string;
  language: Language;
  code: string;
  /** The line the finding names, when the exit is in the program's text. */
  line?: number;
  /**
   * With the tests in a process of their own, where the program's exit cannot come before them:
   * the failure the tests themselves raise (the exit handlers run in the program's process only).
   */
  isolated?: string;
}

const PYTHON_TESTS = "assert add(2, 3) == 5\nassert add(0, 0) == 0\n";
const JS_TESTS = 'const assert = require("node:assert");\nassert.strictEqual(add(2, 3), 5);\n';

const EARLY_EXITS: EarlyExit[] = [
  {
    name: "sys.exit(main()) under __main__, main returning None",
    language: "python",
    code: 'import sys\n\ndef add(a, b):\n    return a - b\n\ndef main():\n    print("ok")\n\nif __name__ == "__main__":\n    sys.exit(main())\n',
    line: 10,
  },
  {
    name: "sys.exit(0) at module level",
    language: "python",
    code: "import sys\ndef add(a, b):\n    return a - b\nsys.exit(0)\n",
    line: 4,
  },
  {
    name: "raise SystemExit",
    language: "python",
    code: "def add(a, b):\n    return a - b\nraise SystemExit\n",
    line: 3,
  },
  { name: "exit()", language: "python", code: "def add(a, b):\n    return a - b\nexit()\n", line: 3 },
  { name: "quit()", language: "python", code: "def add(a, b):\n    return a - b\nquit()\n", line: 3 },
  {
    name: "os._exit(0)",
    language: "python",
    code: "import os\ndef add(a, b):\n    return a - b\nos._exit(0)\n",
    line: 4,
  },
  {
    name: "an atexit handler that exits 0",
    language: "python",
    code: "import atexit, os\natexit.register(lambda: os._exit(0))\ndef add(a, b):\n    return a - b\n",
    line: 2,
    isolated: "AssertionError",
  },
  {
    name: "a sys.excepthook that exits 0",
    language: "python",
    code: "import os, sys\nsys.excepthook = lambda *error: os._exit(0)\ndef add(a, b):\n    return a - b\n",
    line: 2,
    isolated: "AssertionError",
  },
  {
    name: "a thread that exits 0",
    language: "python",
    code: "import os, threading, time\n\ndef later():\n    time.sleep(0.2)\n    os._exit(0)\n\nthreading.Thread(target=later).start()\n\ndef add(a, b):\n    return a - b\n",
    line: 5,
    isolated: "AssertionError",
  },
  {
    name: "exec into another program",
    language: "python",
    code: 'import os\ndef add(a, b):\n    return a - b\nos.execv("/bin/sh", ["sh", "-c", "echo all tests passed"])\n',
  },
  {
    name: "a SIGTERM to itself, with a handler that exits 0",
    language: "python",
    code: "import os, signal\nsignal.signal(signal.SIGTERM, lambda *a: os._exit(0))\ndef add(a, b):\n    return a - b\nos.kill(os.getpid(), signal.SIGTERM)\n",
    line: 2,
  },
  {
    name: "process.exit(0)",
    language: "javascript",
    code: "function add(a, b) {\n  return a - b;\n}\nconsole.log('ok');\nprocess.exit(0);\n",
    line: 5,
  },
  {
    name: "an uncaughtException handler exiting 0",
    language: "javascript",
    code: 'process.on("uncaughtException", () => process.exit(0));\nfunction add(a, b) {\n  return a - b;\n}\n',
    line: 1,
    isolated: "AssertionError",
  },
  {
    name: "an exit listener that resets process.exitCode",
    language: "javascript",
    code: 'process.on("exit", () => {\n  process.exitCode = 0;\n});\nfunction add(a, b) {\n  return a - b;\n}\n',
    line: 2,
    isolated: "AssertionError",
  },
  {
    name: "process.reallyExit(0)",
    language: "javascript",
    code: "function add(a, b) {\n  return a - b;\n}\nprocess.reallyExit(0);\n",
    line: 4,
  },
];

const testsFor = (language: Language) => (language === "python" ? PYTHON_TESTS : JS_TESTS);

describe("a run with tests passes only when the tests ran to their end", () => {
  const sandbox = createSandbox({ kind: "process" });
  afterAll(() => sandbox.close?.());

  for (const testIsolation of TEST_ISOLATIONS) {
    for (const shape of EARLY_EXITS) {
      // In a process of their own the tests outlive a handler the program installed in its own.
      const expected = testIsolation === "process" ? shape.isolated : undefined;
      it(`fails a program that ends the process early, tests ${testIsolation}: ${shape.name}`, async () => {
        const model = scriptedModel(fence(shape.code, shape.language));
        const result = await createAgent({ model, sandbox }).invoke(
          { task: "Write add(a, b).", language: shape.language, tests: testsFor(shape.language) },
          { context: { maxAttempts: 1, testIsolation } },
        );
        expect(result.status).toBe("failed");
        expect(result.critique?.passed).toBe(false);
        // The mark never shows: not in the output the fixer reads, not in the live lines.
        expect(result.lastRun?.stderr).not.toContain("selfheal-tests-done");
        if (expected) {
          expect(result.history).toEqual([expect.objectContaining({ outcome: expected })]);
          return;
        }
        expect(result.history).toEqual([expect.objectContaining({ outcome: TESTS_NOT_FINISHED })]);
        expect(result.lastRun?.testsCompleted).toBe(false);
        expect(result.errors[0]?.message).toMatch(
          /ended the process \(exit status 0\) before the acceptance tests finished/,
        );
        if (shape.line) expect(result.errors[0]?.message).toContain(`at line ${shape.line}`);
      });
    }
  }

  it("passes the same shape once the program no longer ends the process, with the mark gone from stderr", async () => {
    const model = scriptedModel(
      fence(EARLY_EXITS[0]!.code),
      fence('import sys\n\ndef add(a, b):\n    return a + b\n\nprint("warn", file=sys.stderr)\n'),
    );
    const result = await createAgent({ model, sandbox }).invoke({ task: "Write add(a, b).", tests: PYTHON_TESTS });
    expect(result.status).toBe("passed");
    expect(result.attempt).toBe(2);
    expect(result.history.map((entry) => entry.outcome)).toEqual([TESTS_NOT_FINISHED, "passed"]);
    expect(result.lastRun).toMatchObject({ testsCompleted: true, stderr: "warn\n" });
    expect(result.lastRun?.liveTail).toEqual([{ stream: "stderr", line: "warn" }]);
  });

  it("tells the fixer where the program ends the process", async () => {
    const prompts: string[] = [];
    const model = scriptedModel(fence(EARLY_EXITS[1]!.code), (messages) => {
      prompts.push(messages.map((message) => String(message.content)).join("\n"));
      return fence("def add(a, b):\n    return a + b\n");
    });
    const result = await createAgent({ model, sandbox }).invoke({ task: "Write add(a, b).", tests: PYTHON_TESTS });
    expect(result.status).toBe("passed");
    expect(prompts[0]).toContain("the program ended the process (exit status 0) before the acceptance tests finished");
    expect(prompts[0]).toContain("`sys.exit(0)` at line 4");
  });

  it("still passes a program without tests that exits 0 on purpose", async () => {
    const model = scriptedModel(fence("import sys\nprint('done')\nsys.exit(0)\n"));
    const result = await createAgent({ model, sandbox }).invoke({ task: "Print done and exit." });
    expect(result.status).toBe("passed");
    expect(result.lastRun?.testsCompleted).toBeUndefined();
  });

  it("fails a run whose output says ok but whose tests never ran", async () => {
    const model = scriptedModel(fence("import os\nprint('All tests passed')\nos._exit(0)\n"));
    const result = await createAgent({ model, sandbox }).invoke(
      { task: "Write add.", tests: PYTHON_TESTS },
      { context: { maxAttempts: 1 } },
    );
    expect(result.status).toBe("failed");
    expect(result.lastRun?.stdout).toBe("All tests passed\n");
  });

  it("does not pass a program that prints its own source, mark included, with the tests appended", async () => {
    // The source holds the mark's nonce, but spelled with an escape; printing it is not writing it.
    const model = scriptedModel(
      fence("import sys\ndef add(a, b):\n    return a - b\nprint(open(__file__).read())\nsys.exit(0)\n"),
    );
    const result = await createAgent({ model, sandbox }).invoke(
      { task: "Write add.", tests: PYTHON_TESTS },
      { context: { maxAttempts: 1, testIsolation: "shared" } },
    );
    expect(result.lastRun?.stdout).toContain("selfheal-tests-done");
    expect(result.status).toBe("failed");
  });

  it("shows a program its own text alone when the tests run in a process of their own", async () => {
    const model = scriptedModel(fence("def add(a, b):\n    return a - b\nprint(open(__file__).read())\n"));
    const result = await createAgent({ model, sandbox }).invoke(
      { task: "Write add.", tests: PYTHON_TESTS },
      { context: { maxAttempts: 1 } },
    );
    expect(result.lastRun?.stdout).toBe("def add(a, b):\n    return a - b\nprint(open(__file__).read())\n\n");
    expect(result.lastRun?.testIsolation).toBe("process");
    expect(result.status).toBe("failed");
  });
});

describe("the completion mark", () => {
  it("is a fresh nonce per run, after the tests, and absent without tests", () => {
    const first = assembleProgram("x = 1", "assert x == 1", "python");
    const second = assembleProgram("x = 1", "assert x == 1", "python");
    expect(first.completionMark).toMatch(/^\x1eselfheal-tests-done:[0-9a-f]{32}\n$/);
    expect(first.completionMark).not.toBe(second.completionMark);
    expect(first.source.trimEnd().split("\n").at(-1)).toContain("selfheal-tests-done");
    expect(first.source).not.toContain("\x1e");
    expect(assembleProgram("x = 1", undefined, "python").completionMark).toBeUndefined();
  });

  it("is found only when the run wrote it, and taken out of stderr", () => {
    const program = assembleProgram("x = 1", "assert x", "python");
    const run = { status: "ok", exitCode: 0, signal: null, stdout: "", truncated: false, durationMs: 1 } as const;
    expect(settleCompletion({ ...run, stderr: `a\n${program.completionMark}` }, program)).toMatchObject({
      stderr: "a\n",
      testsCompleted: true,
    });
    expect(settleCompletion({ ...run, stderr: "\x1eselfheal-tests-done:0000\n" }, program)).toMatchObject({
      testsCompleted: false,
    });
  });

  it("names the program's exit calls, not those in comments or strings", () => {
    const python = 'import sys\n# sys.exit(1) is not called\nprint("exit(2)")\nsys.exit(main())\nos._exit(0)\n';
    expect(findExitCalls(python, "python")).toEqual([
      { line: 4, text: "sys.exit(main())" },
      { line: 5, text: "os._exit(0)" },
    ]);
    expect(
      findExitCalls("// process.exit(1)\nprocess.exitCode = 0;\nif (x === 1) process.exit(2);", "javascript"),
    ).toEqual([
      { line: 2, text: "process.exitCode = 0;" },
      { line: 3, text: "if (x === 1) process.exit(2);" },
    ]);
  });
});

/** Why a backend cannot run here, or null; a require flag from .ci/run turns the reason into a failure. */
const BACKEND_CASES: Array<{ name: string; language: Language; code: string; completes: boolean }> = [
  {
    name: "a program that lets its tests run",
    language: "python",
    code: "def add(a, b):\n    return a + b\n",
    completes: true,
  },
  {
    name: "sys.exit(0)",
    language: "python",
    code: "import sys\ndef add(a, b):\n    return a - b\nsys.exit(0)\n",
    completes: false,
  },
  {
    name: "os._exit(0)",
    language: "python",
    code: "import os\ndef add(a, b):\n    return a - b\nos._exit(0)\n",
    completes: false,
  },
  {
    name: "a JavaScript program that lets its tests run",
    language: "javascript",
    code: "function add(a, b) {\n  return a + b;\n}\n",
    completes: true,
  },
  {
    name: "process.exit(0)",
    language: "javascript",
    code: "function add(a, b) {\n  return a - b;\n}\nprocess.exit(0);\n",
    completes: false,
  },
];

for (const backend of BACKENDS) {
  const missing = backendMissing(backend.kind);
  describe.skipIf(missing !== null)(
    `the completion mark on the ${backend.kind} backend${missing ? `: skipped, ${missing}` : ""}`,
    () => {
      const sandbox = missing === null ? backend.make() : undefined;
      afterAll(() => sandbox?.close?.());
      for (const testCase of BACKEND_CASES) {
        it(`${testCase.completes ? "comes back from" : "is missing after"} ${testCase.name}`, async () => {
          const program = assembleProgram(testCase.code, testsFor(testCase.language), testCase.language);
          const run = settleCompletion(
            await sandbox!.run({ language: testCase.language, code: program.source }),
            program,
          );
          expect(run.status).toBe("ok");
          expect(run.testsCompleted).toBe(testCase.completes);
          expect(run.stderr).not.toContain("selfheal-tests-done");
        });
      }
    },
  );
}
