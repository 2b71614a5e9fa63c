import type { Sandbox } from "../index.js";
import { judgeProgram } from "./judge.js";
import type { AttemptRecord } from "./records.js";

/** Judges one program on the hidden tests. */
export type Judge = (program: string, hiddenTests: string) => Promise<AttemptRecord["hidden"]>;

/** The hidden-test judge, run only after a run has ended; one program is judged once however often it recurs. */
export function createJudge(sandbox: Sandbox, timeoutMs: number): Judge {
  const verdicts = new Map<string, Promise<AttemptRecord["hidden"]>>();
  return (program, hiddenTests) => {
    if (program.trim() === "")
      return Promise.resolve({
        passed: false,
        status: "error",
        errorClass: "NoProgram",
        error: "no program was written",
      });
    const key = `${program}\u0000${hiddenTests}`;
    let verdict = verdicts.get(key);
    if (verdict === undefined) {
      verdict = judgeProgram(sandbox, program, hiddenTests, timeoutMs).then(
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
