import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../src/core/limits.js";
import { createSandbox, type Language, type ManagedSandbox } from "../../src/index.js";
import {
  JUDGED_MAIN_HEAD,
  NODE_JUDGE_RUN_FILE,
  PYTHON_JUDGE_LINE,
  PYTHON_JUDGED_PROGRAM_FILE,
  stampJudge,
} from "../../src/sandbox/host/bootstrap.js";
import { pythonBootstrapSettings } from "../../src/sandbox/host/command.js";
import { settleCompletion } from "../../src/tools/assemble.js";
import { NODE_JUDGE } from "../../src/tools/judge/node-judge.js";
import { prepareProgram } from "../../src/tools/judge/prepare.js";
import { PYTHON_JUDGE, PYTHON_JUDGE_FILE } from "../../src/tools/judge/python-judge.js";
import { takeRuntimeValues } from "../../src/tools/runtime-values/index.js";
import { backendMissing } from "../helpers/backends.js";
import { isRoot } from "../helpers/capabilities.js";

/**
 * A pool's interpreter forks a judged run's program process while it waits for its go, once the
 * sandbox's last Python run was judged with its tests in their own process (python-judge.ts,
 * `_fork_ahead`). A run that takes it must be the run it would have been with the fork on the
 * clock; a run that is not judged must find no trace of it.
 */

/** The program's recursion headroom and what it finds, printed at its top level, and the function the tests call. */
const DEPTH_PROGRAM = [
  "import os, sys",
  "def deepest(n):",
  "    try:",
  "        return deepest(n + 1)",
  "    except RecursionError:",
  "        return n",
  "print('depth', deepest(0))",
  "print('stdin', repr(sys.stdin.read()))",
  // What the program finds beside it: itself alone, whichever files its judge's run came with.
  "print('files', sorted(os.listdir('.')), open(__file__).read().startswith('import os, sys'))",
  "def add(a, b):",
  "    return a + b",
  "",
].join("\n");
type JudgedRun = ReturnType<typeof settleCompletion>;

const PASSING_TESTS = "assert add(1, 2) == 3\n";
const FAILING_TESTS = "assert add(1, 2) == 3\nassert add(2, 2) == 5\n";

/** A judged run of the program of `language`; `replaced` stands in for files the judge prepared. */
async function judged(
  sandbox: ManagedSandbox,
  tests: string,
  language: Language = "python",
  replaced: Record<string, string> = {},
): Promise<JudgedRun> {
  // NODE_PROGRAM is defined with the JavaScript cases below.
  const prepared = prepareProgram(language === "python" ? DEPTH_PROGRAM : NODE_PROGRAM, tests, language);
  const result = await sandbox.run({
    language,
    code: prepared.code,
    files: { ...prepared.files, ...replaced },
    ...(prepared.stdin !== undefined ? { stdin: prepared.stdin } : {}),
    timeoutMs: 30_000,
  });
  return settleCompletion(result, prepared.assembled);
}

/** What a judged run's verdict and outputs come to, for comparing two runs of one program. */
function outcome(result: JudgedRun) {
  const { status, exitCode, signal, stdout, testsCompleted } = result;
  return {
    status,
    exitCode,
    signal,
    stdout,
    testsCompleted,
    // The nonce of the completion mark is each run's own, and so is the work dir.
    stderr: result.stderr.replace(/[0-9a-f]{32}/g, "NONCE").replace(/[^\s"(]*\/main\.(py|js)/g, "main.$1"),
  };
}

/**
 * Interpreter processes under this one whose parent is an interpreter of the same kind: a waiting
 * interpreter's program process made ahead. `command` begins the kind's process name: "python", or
 * the execute-only Node a JavaScript run starts from ("selfheal-judge-", cut at 15 characters).
 */
function madeAheadBelow(root: number, command: string): number[] {
  const found: number[] = [];
  const visit = (pid: number, parentIsInterpreter: boolean) => {
    let isInterpreter = false;
    try {
      isInterpreter = readFileSync(`/proc/${pid}/comm`, "utf8").startsWith(command);
    } catch {
      return;
    }
    if (isInterpreter && parentIsInterpreter) found.push(pid);
    let children: number[] = [];
    try {
      children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8")
        .trim()
        .split(/\s+/)
        .filter(Boolean)
        .map(Number);
    } catch {
      return;
    }
    for (const child of children) visit(child, isInterpreter);
  };
  visit(root, false);
  return found;
}

describe("main.py's line of a judged Python run", () => {
  /** The judged program's file's first line: the run's runtime-values settings. */
  const settingsOf = (files: Record<string, string> | undefined): unknown =>
    JSON.parse(files?.[PYTHON_JUDGED_PROGRAM_FILE]?.split("\n")[0] ?? "");

  it("names the judge's file where the bootstrap looks for it, so that a judged run keeps the judge it holds", () => {
    expect(PYTHON_JUDGE_LINE.indexOf(PYTHON_JUDGE_FILE) + PYTHON_JUDGE_FILE.length).toBeLessThanOrEqual(
      JUDGED_MAIN_HEAD,
    );
  });

  it("is the same for every run, runtime values on or off, which a waiting interpreter compiles ahead", () => {
    const plain = prepareProgram(DEPTH_PROGRAM, PASSING_TESTS, "python");
    const recorded = prepareProgram(DEPTH_PROGRAM, FAILING_TESTS, "python", { values: { calls: true } });
    expect(plain.code).toBe(PYTHON_JUDGE_LINE);
    expect(recorded.code).toBe(PYTHON_JUDGE_LINE);
    expect(settingsOf(plain.files)).toBeNull();
    expect(settingsOf(recorded.files)).toMatchObject({ nonce: recorded.valuesNonce, calls: true });
  });

  it("records the runtime values it is asked for, from a pool's interpreter that holds it compiled", async () => {
    const sandbox = createSandbox({ kind: "process", poolSize: 1 });
    try {
      // The first judged run makes the pool's next interpreter one that holds the judge and the line.
      await judged(sandbox, PASSING_TESTS);
      await sandbox.prewarm(["python"]);
      const prepared = prepareProgram(DEPTH_PROGRAM, FAILING_TESTS, "python", { values: { calls: true } });
      const result = await sandbox.run({
        language: "python",
        code: prepared.code,
        ...(prepared.files ? { files: prepared.files } : {}),
        ...(prepared.stdin !== undefined ? { stdin: prepared.stdin } : {}),
        timeoutMs: 30_000,
      });
      const { values } = takeRuntimeValues(result, prepared.valuesNonce);
      expect(settleCompletion(result, prepared.assembled).testsCompleted).toBe(false);
      expect(values?.assertion?.parts.map((part) => part.value)).toEqual(["4", "5"]);
      expect(values?.calls).toEqual([{ function: "add", line: 15, args: "2, 2", returned: "4" }]);
    } finally {
      await sandbox.close();
    }
  });
});

describe("the process backend's pool", () => {
  const sandbox = createSandbox({ kind: "process", poolSize: 1 });
  afterAll(() => sandbox.close());

  it("forks a judged run's program process ahead only after a judged run", async () => {
    await sandbox.prewarm(["python"]);
    expect(madeAheadBelow(process.pid, "python")).toEqual([]);
    expect((await judged(sandbox, PASSING_TESTS)).testsCompleted).toBe(true);
    await sandbox.prewarm(["python"]);
    expect(madeAheadBelow(process.pid, "python")).toHaveLength(1);
    // A run that is not judged: the next interpreter waits alone again.
    expect((await sandbox.run({ language: "python", code: "print(1)\n" })).stdout).toBe("1\n");
    await sandbox.prewarm(["python"]);
    expect(madeAheadBelow(process.pid, "python")).toEqual([]);
  });
});

for (const kind of ["process", "bwrap"] as const) {
  const missing = backendMissing(kind);
  describe.skipIf(missing !== null)(`a judged run on ${kind}${missing ? `: skipped, ${missing}` : ""}`, () => {
    const warm = createSandbox({ kind, poolSize: 1 });
    const cold = createSandbox({ kind, prewarm: false, forkServer: false });
    afterAll(() => Promise.all([warm.close(), cold.close()]));

    it("is the same run from an interpreter that forked it ahead as from a cold start", async () => {
      // The first judged run teaches the pool; the ones after it take a process forked ahead.
      await judged(warm, PASSING_TESTS);
      for (const tests of [PASSING_TESTS, FAILING_TESTS]) {
        await warm.prewarm(["python"]);
        const ahead = outcome(await judged(warm, tests));
        const alone = outcome(await judged(cold, tests));
        expect(ahead).toEqual(alone);
        // The depth line shows the recursion headroom; stdin holds the tests, which the program never reads.
        expect(ahead.stdout).toMatch(/^depth \d+\nstdin ''\nfiles \['main.py'\] True\n/);
      }
    });

    it("is the same run back to back, where the pool refills while the run executes (on bwrap, by forks)", async () => {
      const alone = outcome(await judged(cold, PASSING_TESTS));
      const chain: ReturnType<typeof outcome>[] = [];
      for (let run = 0; run < 6; run++) chain.push(outcome(await judged(warm, PASSING_TESTS)));
      expect(chain).toEqual(Array.from({ length: 6 }, () => alone));
    });

    it("runs the run's own judge file where its stamp is not the judge's held ahead", async () => {
      // The pool's interpreter holds this build's judge; main.py's line takes it only for a judge
      // file of the same stamp, and the host leaves the file out only where its text is the one held.
      await judged(warm, PASSING_TESTS);
      await warm.prewarm(["python"]);
      const body = PYTHON_JUDGE.slice(PYTHON_JUDGE.indexOf("\n") + 1);
      const own = stampJudge(`${body}\nprint("the run's own judge", flush=True)\n`);
      const result = await judged(warm, PASSING_TESTS, "python", { [PYTHON_JUDGE_FILE]: own });
      expect(result.stdout).toMatch(/^the run's own judge\ndepth \d+\nstdin ''\nfiles \['main.py'\] True\n$/);
      expect(result.testsCompleted).toBe(true);
    });

    it("leaves no process to a run that is not judged, and its process dumpable", async () => {
      await judged(warm, PASSING_TESTS);
      await warm.prewarm(["python"]);
      const result = await warm.run({
        language: "python",
        code: [
          "import os",
          "pid = os.getpid()",
          "print('children', repr(open(f'/proc/{pid}/task/{pid}/children').read()))",
          "try:",
          "    os.waitpid(-1, os.WNOHANG)",
          "    print('a child to wait for')",
          "except ChildProcessError:",
          "    print('no child')",
          // Not dumpable while it waited with a judged run's process forked: dumpable again, as alone.
          "import ctypes",
          "print('dumpable', ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))",
          "",
        ].join("\n"),
      });
      expect(result.stdout).toBe("children ''\nno child\ndumpable 1\n");
    });
  });
}

/** JavaScript: what the program process sees of its start, and the function the tests call. */
const NODE_PROGRAM = [
  'const fs = require("node:fs");',
  'console.log("argv", JSON.stringify(process.argv.slice(1).map((arg) => arg.split("/").pop())));',
  'console.log("stdin", JSON.stringify(fs.readFileSync(0, "utf8")));',
  'console.log("env", Object.keys(process.env).filter((name) => name.startsWith("SELFHEAL")).length);',
  "function add(a, b) {",
  "  return a + b;",
  "}",
  "",
].join("\n");
const NODE_PASSING = 'const assert = require("node:assert");\nassert.strictEqual(add(1, 2), 3);\n';
const NODE_FAILING =
  'const assert = require("node:assert");\nassert.strictEqual(add(1, 2), 3);\nassert.strictEqual(add(2, 2), 5);\n';

describe("the process backend's JavaScript pool", () => {
  const sandbox = createSandbox({ kind: "process", poolSize: 1 });
  afterAll(() => sandbox.close());

  it("starts a judged run's program process ahead only after a judged run", async () => {
    // The execute-only Node a JavaScript run starts from (its name cut at 15 characters).
    const node = "selfheal-judge-";
    await sandbox.prewarm(["javascript"]);
    expect(madeAheadBelow(process.pid, node)).toEqual([]);
    expect((await judged(sandbox, NODE_PASSING, "javascript")).testsCompleted).toBe(true);
    await sandbox.prewarm(["javascript"]);
    expect(madeAheadBelow(process.pid, node)).toHaveLength(1);
    expect((await sandbox.run({ language: "javascript", code: "console.log(1);\n" })).stdout).toBe("1\n");
    await sandbox.prewarm(["javascript"]);
    expect(madeAheadBelow(process.pid, node)).toEqual([]);
  });
});

for (const kind of ["process", "bwrap"] as const) {
  const missing = backendMissing(kind);
  describe.skipIf(missing !== null)(
    `a judged JavaScript run on ${kind}${missing ? `: skipped, ${missing}` : ""}`,
    () => {
      const warm = createSandbox({ kind, poolSize: 1 });
      const cold = createSandbox({ kind, prewarm: false, forkServer: false });
      afterAll(() => Promise.all([warm.close(), cold.close()]));

      it("is the same run from an interpreter that started it ahead as from a cold start, back to back too", async () => {
        await judged(warm, NODE_PASSING, "javascript");
        for (const tests of [NODE_PASSING, NODE_FAILING]) {
          await warm.prewarm(["javascript"]);
          const ahead = outcome(await judged(warm, tests, "javascript"));
          const alone = outcome(await judged(cold, tests, "javascript"));
          expect(ahead).toEqual(alone);
          // The program's argv is main.js alone, its stdin empty, and no variable of ours is left to it.
          expect(ahead.stdout).toMatch(/^argv \["main\.js"\]\nstdin ""\nenv 0\n/);
        }
        const alone = outcome(await judged(cold, NODE_PASSING, "javascript"));
        for (let run = 0; run < 4; run++)
          expect(outcome(await judged(warm, NODE_PASSING, "javascript"))).toEqual(alone);
      });

      it("runs the run's own judge file where its text is not the judge compiled ahead", async () => {
        // The pool's interpreter compiles the judge of this build while it waits; main.js's line
        // takes that code only for a judge file of the same text. (Without that check this case
        // fails: the compiled code, not the file, runs in a warm run.)
        await judged(warm, NODE_PASSING, "javascript");
        await warm.prewarm(["javascript"]);
        const own = `process.stdout.write("the run's own judge\\n");\n${NODE_JUDGE}`;
        const result = await judged(warm, NODE_PASSING, "javascript", { [NODE_JUDGE_RUN_FILE]: own });
        expect(result.stdout).toMatch(/^the run's own judge\nargv \["main\.js"\]\n/);
        expect(result.testsCompleted).toBe(true);
      });

      it("leaves no live process to a run that is not judged", async () => {
        await judged(warm, NODE_PASSING, "javascript");
        await warm.prewarm(["javascript"]);
        // Killed before the program's first line; reaped on the loop's first turns.
        const result = await warm.run({
          language: "javascript",
          code: [
            'const fs = require("node:fs");',
            'const children = () => fs.readFileSync("/proc/" + process.pid + "/task/" + process.pid + "/children", "utf8").trim();',
            'const live = children().split(/\\s+/).filter(Boolean).filter((pid) => !/\\) [ZX] /.test(fs.readFileSync("/proc/" + pid + "/stat", "utf8")));',
            'console.log("live", live.length);',
            'const check = () => (children() === "" ? console.log("reaped") : setTimeout(check, 10));',
            "check();",
            "",
          ].join("\n"),
        });
        expect(result.stdout).toBe("live 0\nreaped\n");
      });
    },
  );
}

/**
 * The pages the two processes share after the fork made ahead: copied while they wait where the
 * interpreter is idle until its go, left shared (copied as written) where a run executes meanwhile
 * ("judged-busy", a refill for runs back to back), whose CPU the copying would take. The program
 * process's private dirty memory, once it waits for its program, tells which.
 */
describe("the fork made ahead, idle or beside a run", () => {
  const privateDirtyKb = (touch: boolean): number => {
    const script = [
      "import os, sys, time",
      'namespace = {"__name__": "selfheal_judge", "VALUES": None}',
      'exec(compile(sys.stdin.read(), "judge", "exec"), namespace)',
      'namespace["_fork_ahead"](sys.argv[1] == "touch")',
      'pid = namespace["_AHEAD"][0][0]',
      // Until it waits in read(2) for its program: its copying, where it copies, is over.
      "while open('/proc/%d/syscall' % pid).read().split()[0] != '0':",
      "    time.sleep(0.005)",
      "print([int(line.split()[1]) for line in open('/proc/%d/smaps_rollup' % pid) if line.startswith('Private_Dirty:')][0])",
      'namespace["_discard_ahead"]()',
    ].join("\n");
    const run = spawnSync("python3", ["-I", "-c", script, touch ? "touch" : "busy"], {
      input: PYTHON_JUDGE,
      encoding: "utf8",
      timeout: 60_000,
    });
    if (run.status !== 0) throw new Error(run.stderr);
    return Number(run.stdout.trim());
  };

  it("is asked for by the bootstrap's setting: copied for a pool's idle interpreter, shared for a refill beside a run", () => {
    const settings = (warm: "judged" | "judged-busy") =>
      pythonBootstrapSettings({ limits: DEFAULT_LIMITS, warm, supportDir: "/support" }).filter((setting) =>
        setting.startsWith("ahead"),
      );
    expect(settings("judged")).toEqual(["ahead"]);
    expect(settings("judged-busy")).toEqual(["ahead=busy"]);
  });

  // /proc/<pid>/syscall and smaps of the non-dumpable process: root's to read (CI runs as root).
  it.skipIf(!isRoot)("copies the shared pages ahead only where asked (measured here: 12 MB against 1.6 MB)", () => {
    const copied = privateDirtyKb(true);
    const shared = privateDirtyKb(false);
    expect(copied).toBeGreaterThan(6_000);
    expect(shared).toBeLessThan(4_000);
  });
});
