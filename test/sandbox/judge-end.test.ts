import { afterAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/index.js";
import { settleCompletion } from "../../src/tools/assemble.js";
import { prepareProgram } from "../../src/tools/judge/prepare.js";
import { BACKENDS, backendMissing } from "../helpers/backends.js";

/**
 * The end of a judged run with the tests in their own process: the program process ends as a
 * program does (threads joined, atexit run, output written) and says so over the channel, and the
 * test process then ends the run without waiting out that process's exit (python-judge.ts,
 * `_TestSide.end`). What the program does at its end stays in the run, as with the tests appended;
 * an end the program never says (its own os._exit, a process it left holding the channel) is
 * waited for as its exit, never until the time limit.
 */

const ADD = "def add(a, b):\n    return a + b\n";
const TESTS = "assert add(1, 2) == 3\n";

/** Each case's program and what its run must come to, written down, under either isolation. */
const ENDS = [
  {
    name: "a thread that prints after the tests and an atexit handler that prints after it",
    program: [
      "import atexit, threading, time",
      ADD,
      "atexit.register(lambda: print('atexit'))",
      "threading.Thread(target=lambda: (time.sleep(0.2), print('thread'))).start()",
      "",
    ].join("\n"),
    exitCode: 0,
    stdout: "thread\natexit\n",
  },
  {
    name: "an atexit handler that ends the process with status 3",
    program: [
      "import atexit, os",
      ADD,
      "atexit.register(lambda: (print('leaving', flush=True), os._exit(3)))",
      "",
    ].join("\n"),
    exitCode: 3,
    stdout: "leaving\n",
  },
  {
    name: "a daemon left holding every descriptor, then an atexit handler that ends the process with status 3",
    program: [
      "import atexit, os, time",
      ADD,
      "def leave():",
      "    if os.fork() == 0:",
      "        os.setsid()",
      "        time.sleep(60)",
      "        os._exit(0)",
      "    os._exit(3)",
      "atexit.register(leave)",
      "",
    ].join("\n"),
    exitCode: 3,
    stdout: "",
  },
];

const ADD_JS = "function add(a, b) {\n  return a + b;\n}\n";
const TESTS_JS = 'const assert = require("node:assert");\nassert.strictEqual(add(1, 2), 3);\n';

/**
 * JavaScript: the program process says its status from its exit listeners, added last at the
 * tests' end (node-program.ts); the program's own listeners and timers still come first.
 */
const JS_ENDS = [
  {
    name: "a timer that prints after the tests and an exit listener that prints after it",
    program: [
      ADD_JS,
      'process.on("exit", () => console.log("exit listener"));',
      'setTimeout(() => console.log("timer"), 200);',
      "",
    ].join("\n"),
    exitCode: 0,
    stdout: "timer\nexit listener\n",
  },
  {
    name: "an exit listener that sets the exit code to 3",
    program: [ADD_JS, 'process.on("exit", () => { console.log("leaving"); process.exitCode = 3; });', ""].join("\n"),
    exitCode: 3,
    stdout: "leaving\n",
  },
  {
    name: "a daemon left holding every descriptor, then process.reallyExit(3) from an exit listener",
    program: [
      ADD_JS,
      'process.on("exit", () => {',
      '  require("node:child_process").spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], { detached: true, stdio: "inherit" }).unref();',
      "  process.reallyExit(3);",
      "});",
      "",
    ].join("\n"),
    exitCode: 3,
    stdout: "",
  },
];

for (const backend of BACKENDS) {
  const missing = backendMissing(backend.kind);
  describe.skipIf(missing !== null)(
    `a judged run's end on ${backend.kind}${missing ? `: skipped, ${missing}` : ""}`,
    () => {
      const sandbox: Sandbox = backend.make();
      afterAll(() => sandbox.close?.());

      const cases = [
        ...ENDS.map((end) => ({ ...end, language: "python" as const, tests: TESTS })),
        ...JS_ENDS.map((end) => ({ ...end, language: "javascript" as const, tests: TESTS_JS })),
      ];
      for (const end of cases) {
        for (const isolation of ["process", "shared"] as const) {
          it(`${end.language}: ${end.name}, the tests ${isolation === "process" ? "in their own process" : "appended"}`, async () => {
            const prepared = prepareProgram(end.program, end.tests, end.language, { isolation });
            const result = settleCompletion(
              await sandbox.run({
                language: end.language,
                code: prepared.code,
                ...(prepared.files ? { files: prepared.files } : {}),
                ...(prepared.stdin !== undefined ? { stdin: prepared.stdin } : {}),
                // Far past any end: a run that waited for the daemon would reach it.
                timeoutMs: 60_000,
              }),
              prepared.assembled,
            );
            expect(result.status).not.toBe("timeout");
            expect({ exitCode: result.exitCode, stdout: result.stdout, testsCompleted: result.testsCompleted }).toEqual(
              {
                exitCode: end.exitCode,
                stdout: end.stdout,
                testsCompleted: true,
              },
            );
          });
        }
      }
    },
  );
}
