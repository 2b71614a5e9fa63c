import { readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { createSandbox, type ManagedSandbox } from "../../src/index.js";
import { settleCompletion } from "../../src/tools/assemble.js";
import { prepareProgram } from "../../src/tools/judge/prepare.js";
import { backendMissing } from "../helpers/backends.js";

/**
 * A pool's interpreter forks a judged run's program process while it waits for its go, once the
 * sandbox's last Python run was judged with its tests in their own process (python-judge.ts,
 * `_fork_ahead`). A run that takes it must be the run it would have been with the fork on the
 * clock; a run that is not judged must find no trace of it.
 */

/** The program's recursion headroom, printed at its top level, and the function the tests call. */
const DEPTH_PROGRAM = [
  "import sys",
  "def deepest(n):",
  "    try:",
  "        return deepest(n + 1)",
  "    except RecursionError:",
  "        return n",
  "print('depth', deepest(0))",
  "print('stdin', repr(sys.stdin.read()))",
  "def add(a, b):",
  "    return a + b",
  "",
].join("\n");
type JudgedRun = ReturnType<typeof settleCompletion>;

const PASSING_TESTS = "assert add(1, 2) == 3\n";
const FAILING_TESTS = "assert add(1, 2) == 3\nassert add(2, 2) == 5\n";

async function judged(sandbox: ManagedSandbox, tests: string): Promise<JudgedRun> {
  const prepared = prepareProgram(DEPTH_PROGRAM, tests, "python");
  const result = await sandbox.run({
    language: "python",
    code: prepared.code,
    ...(prepared.files ? { files: prepared.files } : {}),
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
    stderr: result.stderr.replace(/[0-9a-f]{32}/g, "NONCE").replace(/"[^"]*\/main\.py"/g, '"main.py"'),
  };
}

/** Python processes under this one whose parent is a Python process too: a waiting interpreter's fork. */
function forkedPythonsBelow(root: number): number[] {
  const found: number[] = [];
  const visit = (pid: number, parentIsPython: boolean) => {
    let isPython = false;
    try {
      isPython = readFileSync(`/proc/${pid}/comm`, "utf8").startsWith("python");
    } catch {
      return;
    }
    if (isPython && parentIsPython) found.push(pid);
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
    for (const child of children) visit(child, isPython);
  };
  visit(root, false);
  return found;
}

describe("the process backend's pool", () => {
  const sandbox = createSandbox({ kind: "process", poolSize: 1 });
  afterAll(() => sandbox.close());

  it("forks a judged run's program process ahead only after a judged run", async () => {
    await sandbox.prewarm(["python"]);
    expect(forkedPythonsBelow(process.pid)).toEqual([]);
    expect((await judged(sandbox, PASSING_TESTS)).testsCompleted).toBe(true);
    await sandbox.prewarm(["python"]);
    expect(forkedPythonsBelow(process.pid)).toHaveLength(1);
    // A run that is not judged: the next interpreter waits alone again.
    expect((await sandbox.run({ language: "python", code: "print(1)\n" })).stdout).toBe("1\n");
    await sandbox.prewarm(["python"]);
    expect(forkedPythonsBelow(process.pid)).toEqual([]);
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
        expect(ahead.stdout).toMatch(/^depth \d+\nstdin ''\n/);
      }
    });

    it("is the same run back to back, where the pool refills while the run executes (on bwrap, by forks)", async () => {
      const alone = outcome(await judged(cold, PASSING_TESTS));
      const chain: ReturnType<typeof outcome>[] = [];
      for (let run = 0; run < 6; run++) chain.push(outcome(await judged(warm, PASSING_TESTS)));
      expect(chain).toEqual(Array.from({ length: 6 }, () => alone));
    });

    it("leaves no process to a run that is not judged", async () => {
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
          "",
        ].join("\n"),
      });
      expect(result.stdout).toBe("children ''\nno child\n");
    });
  });
}
