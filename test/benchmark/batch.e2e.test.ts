import { afterAll, describe, expect, it } from "vitest";
import { runBatch } from "../../src/benchmark/batch.js";
import { judgeBatched, judgeProgram } from "../../src/benchmark/judge.js";
import { createSandbox } from "../../src/sandbox/index.js";
import { prepareProgram } from "../../src/tools/judge/prepare.js";

// The real sandbox, as `selfheal bench --verify-dataset` uses it.
const sandbox = createSandbox({ prewarm: ["python"] });
afterAll(() => sandbox.close());

const options = { maxOutputBytes: 65_536 };
const program = (code: string) => ({ code, timeoutMs: 5_000 });

describe("batch runs", () => {
  it("runs each program in a process of its own: what one changes in memory the next does not see", async () => {
    const runs = await runBatch(
      sandbox,
      [
        // json is one of the modules the harness loads for the probe: a change to it dies with the fork too.
        program(
          "import builtins, json, math\nbuiltins.len = lambda x: 0\nmath.pi = 3\njson.dumps = None\nraise ValueError('changed')\n",
        ),
        program(
          "import json, math\nassert len([1, 2]) == 2\nassert math.pi > 3.14\nassert json.dumps([1]) == '[1]'\nprint(__name__)\n",
        ),
      ],
      options,
    );
    expect(runs.map((run) => run?.exitCode)).toEqual([1, 0]);
    expect(runs[0]?.stderr).toMatch(/ValueError: changed\n$/);
    expect(runs[1]?.stdout).toBe("__main__\n");
  });

  it("gives a program the recursion headroom, argv and exit status it has in a run alone", async () => {
    const code =
      "import sys\ndef deepest(n):\n    try:\n        return deepest(n + 1)\n    except RecursionError:\n        return n\n" +
      "print(deepest(0), sys.argv, __name__)\nsys.exit(3)\n";
    const alone = await sandbox.run({ language: "python", code, timeoutMs: 5_000 });
    const [batched] = await runBatch(sandbox, [program(code)], options);
    expect(alone.exitCode).toBe(3);
    expect(batched).toMatchObject({ exitCode: 3, stdout: alone.stdout });
  });

  it("stops at a program that leaves a process behind and does not run the rest", async () => {
    const runs = await runBatch(
      sandbox,
      [
        program("assert False\n"),
        program("import subprocess\nsubprocess.Popen(['sleep', '30'], start_new_session=True)\nassert False\n"),
        program("assert False\n"),
      ],
      options,
    );
    expect(runs[0]?.exitCode).toBe(1);
    // The one that left it behind as well: alone, its run would have waited for the sleep.
    expect(runs.slice(1)).toEqual([null, null]);
  });

  it("stops at a program that kills the process it was forked from, keeping the answers before it", async () => {
    const runs = await runBatch(
      sandbox,
      [
        program("print('first')\n"),
        program("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nprint('after')\n"),
        program("print('next')\n"),
      ],
      options,
    );
    expect(runs[0]).toMatchObject({ exitCode: 0, stdout: "first\n" });
    expect(runs.slice(1)).toEqual([null, null]);
  });

  it("stops at a program that changes the files a run has to itself and does not run the rest", async () => {
    const runs = await runBatch(
      sandbox,
      [
        program("import os\nopen(os.path.join(os.environ['HOME'], 'left.txt'), 'w').write('x')\nassert False\n"),
        program("import os\nassert not os.path.exists(os.path.join(os.environ['HOME'], 'left.txt'))\n"),
      ],
      options,
    );
    expect(runs).toEqual([null, null]);
  });

  it("gives each program a directory holding only its main.py, gone with it, and no other program's code", async () => {
    const look = "import os\nprint(sorted(os.listdir('.')), sorted(os.listdir('..')))\n";
    const runs = await runBatch(
      sandbox,
      [program(`${look}open('mine.txt', 'w').write('x')\nos.mkdir('sub')\n`), program(look)],
      options,
    );
    // The work dir holds the harness (main.py), the plan and this program's directory; no code of another.
    const seen = "['main.py'] ['batch', 'main.py', 'program']\n";
    expect(runs.map((run) => run && { exitCode: run.exitCode, stdout: run.stdout })).toEqual([
      { exitCode: 0, stdout: seen },
      { exitCode: 0, stdout: seen },
    ]);
  });

  it("stops at a program that leaves in its directory what cannot be removed, and does not run the rest", async () => {
    const keep = "import os\nos.mkdir('kept')\nopen('kept/file', 'w').write('x')\nos.chmod('kept', 0o500)\n";
    const runs = await runBatch(sandbox, [program(keep), program("print('next')\n")], options);
    expect(runs).toEqual([null, null]);
  });

  it("ends a program at its own time limit and goes on with the next", async () => {
    const runs = await runBatch(
      sandbox,
      [{ code: "while True:\n    pass\n", timeoutMs: 300 }, program("print('next')\n")],
      options,
    );
    expect(runs[0]).toMatchObject({ timedOut: true, exitCode: null, signal: 9 });
    expect(runs[1]).toMatchObject({ exitCode: 0, stdout: "next\n" });
  });
});

describe("the batched judge", () => {
  const tests = "assert add(2, 3) == 5\n";
  const programs = [
    "def add(a, b):\n    return a + b\n",
    "def add(a, b):\n    return a - b\n",
    "def add(a, b):\n    return a + c\n",
    "import sys\ndef add(a, b):\n    return a + b\nsys.exit(0)\n",
    "import os\ndef add(a, b):\n    return a + b\nos._exit(0)\n",
    "def add(a, b):\n    return a + b\nraise SystemExit(3)\n",
  ];

  it("gives each program the verdict the judge gives it alone, whichever verdicts it keeps from the batch", async () => {
    const items = programs.map((text) => ({ program: text, tests, timeoutMs: 5_000 }));
    const alone = await Promise.all(programs.map((text) => judgeProgram(sandbox, text, tests, 5_000)));
    const expected = alone.map(({ passed, status, errorClass }) => ({ passed, status, errorClass }));
    // Written down, so a judge that changed with the batch could not pass by agreeing with itself.
    expect(expected).toEqual([
      { passed: true, status: "ok", errorClass: undefined },
      { passed: false, status: "error", errorClass: "AssertionError" },
      { passed: false, status: "error", errorClass: "NameError" },
      { passed: false, status: "ok", errorClass: "TestsNotFinished" },
      { passed: false, status: "ok", errorClass: "TestsNotFinished" },
      { passed: false, status: "error", errorClass: "error" },
    ]);
    for (const final of ["passes", "fails"] as const) {
      const batched = await judgeBatched(items, final, { sandbox, lanes: 2, ...options });
      expect(batched.map(({ passed, status, errorClass }) => ({ passed, status, errorClass }))).toEqual(expected);
    }
  }, 60_000);

  it("answers every judged program itself: a program process that says it ended before its exit is no process left behind", async () => {
    // The tests in their own process: each program's process says it ended and exits on its own
    // while its test process ends (python-judge.ts, _TestSide.end); the batch stops at a process a
    // program left, so one it took for left would leave the programs after it unanswered.
    const judged = [0, 1, 2, 3].map(() => prepareProgram(programs[0] ?? "", tests, "python"));
    const answers = await runBatch(
      sandbox,
      judged.map(({ code, files, stdin }) => ({ code, files, stdin, timeoutMs: 5_000 })),
      options,
    );
    expect(
      answers.map(
        (answer) => answer && { exitCode: answer.exitCode, completed: answer.stderr.includes("selfheal-tests-done") },
      ),
    ).toEqual([0, 1, 2, 3].map(() => ({ exitCode: 0, completed: true })));
  }, 60_000);
});
