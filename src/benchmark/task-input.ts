import { type BenchmarkTask, buildHiddenTests } from "./dataset.js";
import { FEEDBACK_MODES, type FeedbackMode } from "./names.js";
import { buildVisibleTests } from "./visible-tests.js";

// What a task's run is given: the prompt, and its tests under a feedback mode.

/**
 * What the agent is asked: the HumanEval prompt (signature and docstring) verbatim, plus the
 * one rule HumanEval's tests depend on: the helpers and imports in the prompt must stay, since
 * the hidden tests may call them.
 */
export function buildBenchmarkTask(task: BenchmarkTask): string {
  return [
    `Complete the Python function \`${task.entry_point}\` below so that it does what its docstring says.`,
    "Reply with the complete program: keep the imports, any helper functions and the signature exactly as given, and implement the body.",
    "",
    task.prompt.trimEnd(),
  ].join("\n");
}

export { FEEDBACK_MODES, type FeedbackMode };

export const FEEDBACK_LABELS: Record<FeedbackMode, string> = {
  visible:
    "feedback: visible (the docstring's examples and the program's own self-checks); the hidden tests judge each run once it has ended",
  oracle:
    "ORACLE FEEDBACK: the hidden tests were the run's tests and their failures reached the fixer. " +
    "Repair figures made so are not comparable with published ones (Reflexion, LDB, AgentCoder repair from visible tests only).",
};

/**
 * A run's tests under a feedback mode, and the hidden tests, which the benchmark keeps to itself:
 * they never enter the run (its input, state or checkpoints) and judge its programs once it has ended.
 */
export function testsForTask(task: BenchmarkTask, feedback: FeedbackMode): { tests?: string; hiddenTests: string } {
  const hiddenTests = buildHiddenTests(task);
  if (feedback === "oracle") return { tests: hiddenTests, hiddenTests };
  const visible = buildVisibleTests(task);
  return visible === null ? { hiddenTests } : { tests: visible, hiddenTests };
}
