import { existsSync } from "node:fs";
import type { Execution, KeptArtifacts, Objection } from "../core/state.js";
import { type Judgement, judgeAttempt, judgeExecution } from "../core/verdict.js";

/**
 * The one verdict on an attempt's run, its expected files included, for the critic and for each
 * candidate alike: a run that failed on its own is not also blamed for the files it never got to
 * write. `findings` are the other objections raised against the attempt (a static check's).
 */
export function judgeWithArtifacts(args: {
  run: Execution;
  hasTests: boolean;
  expect: string[];
  attempt: number;
  findings?: Objection[];
}): Judgement & { artifactFindings: Objection[] } {
  const { run, hasTests } = args;
  const artifactFindings = judgeExecution(run, hasTests).critique.passed
    ? artifactObjections(args.expect, run, args.attempt)
    : [];
  return {
    ...judgeAttempt({ run, hasTests, findings: [...(args.findings ?? []), ...artifactFindings] }),
    artifactFindings,
  };
}

/**
 * Why an attempt that ran cleanly still fails on its artifacts: a limit that kept a file back, or
 * a file the task expects that the program did not write. Objections, so the fixer reads them.
 */
export function artifactObjections(expected: string[], run: Execution, attempt: number): Objection[] {
  if (!run.ran) return [];
  const collected = new Set(run.artifacts?.files.map((file) => file.name));
  const missing = expected.filter((name) => !collected.has(name));
  const objections: Objection[] = (run.artifacts?.problems ?? []).map((message) => ({
    attempt,
    source: "critic",
    type: "ArtifactLimit",
    message,
  }));
  if (missing.length > 0) {
    objections.push({
      attempt,
      source: "critic",
      type: "MissingArtifact",
      message: `the program did not write ${missing.join(", ")}, which the task expects; write ${missing.length > 1 ? "them" : "it"} under out/`,
    });
  }
  return objections;
}

/**
 * This attempt's artifacts as a candidate for `artifacts`, whose reducer keeps the higher score.
 * A folder already gone (the run's end removed it, and time travel came back to this attempt) is
 * not proposed: the state must never point at a folder that is not there.
 */
export function proposedArtifacts(run: Execution, attempt: number, score: number): KeptArtifacts | undefined {
  if (!run.artifacts) return undefined;
  const { folder, files } = run.artifacts;
  if (folder && !existsSync(folder)) return undefined;
  return { attempt, folder, files, score };
}
