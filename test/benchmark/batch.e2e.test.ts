import { afterAll, describe, expect, it } from "vitest";
import { type BatchedRun, runBatch } from "../../src/benchmark/batch.js";
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

/** A judged program (its tests in a process of their own) as a batch program. */
const judgedProgram = (code: string, tests: string, timeoutMs = 5_000) => {
  const { code: line, files, stdin } = prepareProgram(code, tests, "python");
  return { code: line, files, stdin, timeoutMs };
};
/**
 * An answer to compare: a batched program's directory is the work dir's "program" (the isolation rule
 * above), which its tracebacks say, and each run's completion mark has a nonce of its own.
 */
const answered = (run: Pick<BatchedRun, "exitCode" | "stdout" | "stderr"> | null) =>
  run && {
    exitCode: run.exitCode,
    stdout: run.stdout,
    stderr: run.stderr.replaceAll("/program/main.py", "/main.py").replace(/(selfheal-tests-done:)[0-9a-f]+/, "$1"),
  };
/** What a judged run alone answers, for comparing with a batch's answer. */
const judgedAlone = async (code: string, tests: string) => {
  const { code: line, files, stdin } = prepareProgram(code, tests, "python");
  const alone = await sandbox.run({ language: "python", code: line, files, stdin, timeoutMs: 5_000 });
  return answered(alone);
};
/** Programs and their tests, judged in one batch and each alone. */
const batchedAndAlone = async (cases: ReadonlyArray<readonly [string, string]>) => ({
  batched: await runBatch(
    sandbox,
    cases.map(([code, tests]) => judgedProgram(code, tests)),
    options,
  ),
  alone: await Promise.all(cases.map(([code, tests]) => judgedAlone(code, tests))),
});
const ADD = "def add(a, b):\n    return a + b\n";

describe("the batch's test process (judged programs: one test process judges each in turn)", () => {
  it("gives a judged program the recursion headroom, argv and name it has in a run alone, loading and called", async () => {
    const code =
      "import sys\ndef deepest(n):\n    try:\n        return deepest(n + 1)\n    except RecursionError:\n        return n\n" +
      "print('load', deepest(0), sys.argv, __name__)\n";
    const tests = "print('call', deepest(0))\n";
    const alone = await judgedAlone(code, tests);
    const [batched] = await runBatch(sandbox, [judgedProgram(code, tests)], options);
    expect(alone?.stdout).toMatch(/^load \d+ \['main.py'\] __main__\ncall \d+\n$/);
    expect(batched?.stdout).toBe(alone?.stdout);
    expect(batched?.exitCode).toBe(0);
  }, 30_000);

  it("judges each program's tests from the state the first one found: their names and stdout do not carry over", async () => {
    const cases = [
      [ADD, "import math\nleaked = 1\nprint('first', math.floor(2.5))\nassert add(1, 2) == 3\n"],
      // A stdout put in place and left there swallows this program's prints only.
      [ADD, "import io, sys\nsys.stdout = io.StringIO()\nprint('swallowed')\nassert add(1, 2) == 3\n"],
      [ADD, "print('leaked' in globals(), 'math' in globals())\nassert add(1, 2) == 3\n"],
      [ADD, "assert leaked == 1\n"],
    ] as const;
    const { batched, alone } = await batchedAndAlone(cases);
    // Written down, then the same as alone: a judge that changed with the batch cannot pass by agreeing with itself.
    expect(batched.map((run) => run && { exitCode: run.exitCode, stdout: run.stdout })).toEqual([
      { exitCode: 0, stdout: "first 2\n" },
      { exitCode: 0, stdout: "" },
      { exitCode: 0, stdout: "False False\n" },
      { exitCode: 1, stdout: "" },
    ]);
    expect(batched[3]?.stderr).toMatch(/NameError: name 'leaked' is not defined/);
    expect(batched.map(answered)).toEqual(alone);
  }, 60_000);

  it("answers as alone for a program process that exits or is killed during a call, and one that fails to load", async () => {
    const cases = [
      ["import os\ndef add(a, b):\n    os._exit(3)\n", "assert add(1, 2) == 3\n"],
      ["import os, signal\ndef add(a, b):\n    os.kill(os.getpid(), signal.SIGKILL)\n", "assert add(1, 2) == 3\n"],
      ["raise ValueError('at load')\n", "assert add(1, 2) == 3\n"],
      [ADD, "assert add(1, 2) == 3\n"],
    ] as const;
    const { batched, alone } = await batchedAndAlone(cases);
    expect(batched.map((run) => run?.exitCode)).toEqual([3, 1, 1, 0]);
    expect(batched[0]?.stderr).toContain("the program process exited with status 3 during");
    expect(batched[1]?.stderr).toContain("ProgramCrashed: the program process was killed by SIGKILL during");
    expect(batched[2]?.stderr).toMatch(/ValueError: at load\n$/);
    expect(batched.map(answered)).toEqual(alone);
  }, 60_000);

  it.each([
    ["a thread still running", "import threading, time\nthreading.Thread(target=time.sleep, args=(0.2,)).start()\n"],
    ["a function registered to run at exit", "import atexit\natexit.register(print, 'at exit')\n"],
    ["its recursion limit changed", "import sys\nsys.setrecursionlimit(500)\n"],
    ["its directory changed", "import os\nos.chdir('/')\n"],
    ["its environment changed", "import os\nos.environ['LEFT'] = '1'\n"],
  ])(
    "stops at a program whose tests leave the test process changed (%s): that program and the rest run alone",
    async (_, change) => {
      const runs = await runBatch(
        sandbox,
        [
          judgedProgram(ADD, "assert add(1, 2) == 3\n"),
          judgedProgram(ADD, `${change}assert add(1, 2) == 3\n`),
          judgedProgram(ADD, "assert add(1, 2) == 3\n"),
        ],
        options,
      );
      expect(runs.map((run) => run?.exitCode ?? null)).toEqual([0, null, null]);
    },
    30_000,
  );

  it("stops at a judged program that outlives its time, keeping the answers before it", async () => {
    const runs = await runBatch(
      sandbox,
      [
        judgedProgram(ADD, "assert add(1, 2) == 3\n"),
        judgedProgram("def add(a, b):\n    while True:\n        pass\n", "assert add(1, 2) == 3\n", 500),
        judgedProgram(ADD, "assert add(1, 2) == 3\n"),
      ],
      options,
    );
    expect(runs.map((run) => run?.exitCode ?? null)).toEqual([0, null, null]);
  }, 30_000);

  it("keeps the tests from every judged program: not in a file, a descriptor, another process's memory or environment", async () => {
    // Called by the tests, so the test process holds them by then, and the tests of the program before.
    const snoop = `import os
NEEDLES = [('TESTS' + '_' + name).encode() for name in ('first', 'second')]
def holds(path, size=1 << 20, at=None):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        data = os.read(fd, size) if at is None else os.pread(fd, size, at)
    except (OSError, OverflowError):
        return False
    finally:
        os.close(fd)
    return any(needle in data for needle in NEEDLES)
def add(a, b):
    found = []
    for pid in [name for name in os.listdir('/proc') if name.isdigit() and int(name) != os.getpid()]:
        found += ['%s %s' % (pid, part) for part in ('cmdline', 'environ') if holds('/proc/%s/%s' % (pid, part))]
        try:
            fds = os.listdir('/proc/%s/fd' % pid)
        except OSError:
            fds = []
        found += ['%s fd %s' % (pid, fd) for fd in fds if holds('/proc/%s/fd/%s' % (pid, fd))]
        try:
            with open('/proc/%s/maps' % pid) as maps:
                spans = [line.split()[0].split('-') for line in maps]
        except OSError:
            spans = []
        for start, end in spans:
            if holds('/proc/%s/mem' % pid, int(end, 16) - int(start, 16), int(start, 16)):
                found.append('%s mem' % pid)
    for top in ('/tmp', '/dev/shm', '/var/tmp', '/run', os.environ.get('HOME', '/'), '..'):
        for root, _, names in os.walk(top):
            found += [os.path.join(root, name) for name in names if holds(os.path.join(root, name))]
    print(sorted(set(found)))
    return a + b
`;
    // The marker split in the tests' text: only the test process, which joins it, holds it whole.
    const tests = (name: string) => `marker = 'TESTS' + '_${name}'\nassert add(1, 2) == 3\n`;
    const runs = await runBatch(
      sandbox,
      [judgedProgram(ADD, tests("first")), judgedProgram(snoop, tests("second"))],
      options,
    );
    expect(runs.map((run) => run && { exitCode: run.exitCode, stdout: run.stdout })).toEqual([
      { exitCode: 0, stdout: "" },
      { exitCode: 0, stdout: "[]\n" },
    ]);
  }, 60_000);
});
