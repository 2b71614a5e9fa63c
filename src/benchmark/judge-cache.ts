import type { Sandbox } from "../internal.js";
import { type BenchmarkTask, buildHiddenTests, taskHelpers } from "./dataset.js";
import { judgeProgram } from "./judge.js";
import type { AttemptRecord } from "./records.js";

/** Judges one program on a task's hidden tests. */
export type Judge = (program: string, task: BenchmarkTask) => Promise<AttemptRecord["hidden"]>;

/** The hidden-test judge, run only after a run has ended; one program is judged once however often it recurs. */
export function createJudge(sandbox: Sandbox, timeoutMs: number): Judge {
  const verdicts = new Map<string, Promise<AttemptRecord["hidden"]>>();
  return (program, task) => {
    if (program.trim() === "")
      return Promise.resolve({
        passed: false,
        status: "error",
        errorClass: "NoProgram",
        error: "no program was written",
      });
    const hiddenTests = buildHiddenTests(task);
    const key = `${program}\u0000${hiddenTests}`;
    let verdict = verdicts.get(key);
    if (verdict === undefined) {
      verdict = judgeProgram(sandbox, program, hiddenTests, timeoutMs, taskHelpers(task)).then(
        ({ passed, status, error, errorClass }) => ({
          passed,
          status,
          ...(error !== undefined ? { error } : {}),
          ...(errorClass !== undefined ? { errorClass } : {}),
        }),
      );
      verdicts.set(key, verdict);
    }
    return verdict;
  };
}
