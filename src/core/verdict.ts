import type { TestIsolation } from "./run-result.js";
import { describeCheck } from "./runtime-values-text.js";
import type { Critique, Execution } from "./state.js";

/**
 * The verdict on one attempt, as a pure function of its evidence: the run (status, error, whether
 * the acceptance tests ran to their end in it) and the findings raised against it. The critic and
 * the benchmark's judge both call it, so an attempt and a benchmark answer pass by the same rule.
 */

/** Failure types the executor writes for a missing package; the verdict hands their message on as it is. */
export const PACKAGE_FINDINGS = ["PackageNotAvailable", "PackageInstallFailed"] as const;

/** The failure type of a run whose process ended before its acceptance tests finished. */
export const TESTS_NOT_FINISHED = "TestsNotFinished";

export interface Failure {
  type: string;
  message: string;
}

export interface Judgement {
  critique: Critique;
  failure?: Failure;
}

/** A finding from outside the run (a verifier, a missing artifact, a person) that fails it. */
export interface VerdictFinding extends Failure {
  /** Who raised it, named in the summary. */
  source: string;
}

/** What the verdict reads of a run: an `Execution` or a benchmark judge's run. */
export type RunEvidence = Pick<
  Execution,
  | "status"
  | "exitCode"
  | "signal"
  | "stderr"
  | "durationMs"
  | "error"
  | "failedInTests"
  | "testsCompleted"
  | "exitCalls"
  | "values"
>;

export interface VerdictEvidence {
  run: RunEvidence;
  /** Acceptance tests were appended to the program; a pass then needs their completion mark. */
  hasTests: boolean;
  /** Findings against this attempt, in the order raised; the first fails a run that was otherwise clean. */
  findings?: readonly VerdictFinding[];
}

/**
 * The one line a raised error comes to: a failed check says what was computed and what was wanted
 * (a bare `assert` has no message at all), and a message of several lines (node:assert's) is
 * joined into one.
 */
function errorHeadline(run: RunEvidence, assertion: boolean): string {
  const error = run.error!;
  if (assertion && run.values?.assertion) return `${error.type}: ${describeCheck(run.values.assertion)}`;
  const message = error.message.replace(/\s*\n\s*/g, " ").trim();
  return message ? `${error.type}: ${message}` : error.type;
}

function failed(failure: Failure, summary: string, diagnosis: string): Judgement {
  return { failure, critique: { passed: false, summary, diagnosis } };
}

/**
 * Pass or fail, with what the fixer should read. A pass needs a clean exit and, with tests, the
 * mark the harness writes after the last test statement, in this run: a program that ends the
 * process first (`sys.exit(0)`, `os._exit(0)`, `process.exit(0)`, an exit handler) fails whatever
 * its exit status, and so does one that printed "ok" but never reached the mark.
 */
export function judgeAttempt({ run, hasTests, findings = [] }: VerdictEvidence): Judgement {
  const judgement = judgeExecution(run, hasTests);
  const [finding] = findings;
  if (!judgement.critique.passed || !finding) return judgement;
  return failed(
    { type: finding.type, message: finding.message },
    `${finding.source}: ${finding.type}: ${finding.message}`,
    finding.message,
  );
}

/** The verdict that needs no finding: exit status, exceptions, limits and the acceptance tests' completion. */
export function judgeExecution(run: RunEvidence, hasTests: boolean): Judgement {
  const where = run.failedInTests ? "in the acceptance tests" : "in the program";
  switch (run.status) {
    case "ok":
      if (hasTests && run.testsCompleted !== true) return testsNotFinished(run);
      return {
        critique: {
          passed: true,
          summary: hasTests ? "The program ran cleanly and the acceptance tests passed." : "The program ran cleanly.",
          diagnosis: "",
        },
      };
    case "timeout":
      return failed(
        { type: "Timeout", message: "the program did not finish within the time limit" },
        `Timed out after ${Math.round(run.durationMs)} ms.`,
        "Look for an infinite loop, a read that waits for input, or work that grows too fast for the input size.",
      );
    case "memory_limit":
      return failed(
        { type: "MemoryLimit", message: "the program ran out of memory" },
        "Killed at the memory limit.",
        "Something grows without bound: an ever-growing list, unbounded recursion or a huge allocation.",
      );
    case "output_limit":
      return failed(
        { type: "OutputLimit", message: "the program printed more than the output limit" },
        "Stopped for printing too much.",
        "Print less: a loop probably prints on every iteration or never ends.",
      );
    case "unavailable":
      return failed(
        { type: "SandboxUnavailable", message: run.stderr.trim() || "the sandbox could not run the program" },
        "The sandbox was unavailable.",
        "The program did not run; this is an environment problem, not a bug in the code.",
      );
    default:
      break;
  }
  if (run.error) {
    const at = run.error.line ? ` at line ${run.error.line} ${where}` : ` ${where}`;
    const assertion = /Assertion/i.test(run.error.type);
    const packageFinding = (PACKAGE_FINDINGS as readonly string[]).includes(run.error.type);
    const diagnosis = packageFinding
      ? run.error.message
      : assertion
        ? `An assertion failed${at}: the program computes a wrong result for that case. Fix the logic, not the check, unless the check contradicts the task.`
        : `Raised${at}.`;
    return failed({ type: run.error.type, message: run.error.message }, errorHeadline(run, assertion), diagnosis);
  }
  if (run.status === "killed") {
    return failed(
      { type: "Killed", message: `killed by ${run.signal ?? "a signal"}` },
      `Killed by ${run.signal ?? "a signal"}.`,
      "The process was killed: it may have hit a resource limit (processes, file size, CPU time).",
    );
  }
  const lastLine = run.stderr.trim().split("\n").at(-1) ?? "";
  return failed(
    { type: "NonZeroExit", message: `exited with code ${run.exitCode}${lastLine ? `: ${lastLine}` : ""}` },
    `Exited with code ${run.exitCode}.`,
    lastLine
      ? `The last line on stderr was: ${lastLine}`
      : "The program exited with a failure status and printed no error.",
  );
}

/**
 * A clean exit without the completion mark: the process ended before the tests did. The static
 * exit calls the executor found name the likely cause; the runtime evidence is the missing mark.
 */
function testsNotFinished(run: RunEvidence): Judgement {
  const calls = run.exitCalls ?? [];
  const cause =
    calls.length > 0
      ? `it calls ${calls
          .slice(0, 2)
          .map((call) => `\`${call.text}\` at line ${call.line}`)
          .join(" and ")}`
      : "nothing in it calls an exit directly, so look for an exit in an atexit or exit handler, an exception hook, a signal handler or a thread, or a closed or redirected stderr";
  const message = `the program ended the process (exit status ${run.exitCode ?? 0}) before the acceptance tests finished: ${cause}`;
  return failed(
    { type: TESTS_NOT_FINISHED, message },
    `The acceptance tests did not run to their end: ${message}.`,
    "The acceptance tests run after the program has loaded and call its functions, so the program must not end the process " +
      "(no sys.exit/exit/os._exit or process.exit at module level or in the functions the tests call, no exit " +
      "handler that forces a status). Define the functions and let the script end on its own.",
  );
}

/** 100 for a pass; a failure scores by how far through the program and tests it got. */
export function scoreAttempt(run: Pick<Execution, "progress" | "error">, passed: boolean): number {
  if (passed) return 100;
  if (run.progress !== null) return 10 + Math.round(80 * run.progress);
  if (run.error?.type === "NoCodeError") return 0;
  return 5;
}

/**
 * Which way an attempt's acceptance tests were judged, from what its run recorded
 * (`Execution.testIsolation`), in the words of the CLI's last line and the run report.
 */
export function describeTestIsolation(isolation: TestIsolation): string {
  return isolation === "process"
    ? "tests in their own process"
    : "tests in the program's process (testIsolation: shared)";
}
