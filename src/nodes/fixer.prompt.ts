import { type BaseMessage, HumanMessage, SystemMessage } from "@langchain/core/messages";
import type { AllowHostInput } from "../core/allowlist.js";
import type { ErrorRecord } from "../core/ledger.js";
import type { Critique, Execution } from "../core/state.js";
import type { Language } from "../sandbox/types.js";
import { describeRuntimeValues } from "../tools/runtime-values/index.js";
import {
  cutNote,
  ERROR_LINE_LIMITS,
  LANGUAGE_NAMES,
  networkReport,
  networkSection,
  summarizeErrors,
  tail,
} from "./prompt-parts.js";

/** Caps that keep the fixer's prompt flat: attempt 5 costs what attempt 2 did. */
export const FIXER_LIMITS = { tracebackChars: 2000, outputTailChars: 800, valuesChars: 1600, ...ERROR_LINE_LIMITS };

/** Runs of at least this many task lines found verbatim in the program are not sent twice. */
const REPEATED_RUN_LINES = 3;

/**
 * The task often carries code the program repeats (a signature and docstring to complete). The
 * fixer sees the program whole, so the task keeps a pointer instead of a second copy; it is the
 * largest part of the prompt that does not need to be there.
 */
export function taskWithoutRepeats(task: string, code: string): string {
  const codeLines = code.split("\n").map((line) => line.trim());
  const codeText = `\n${codeLines.join("\n")}\n`;
  const taskLines = task.split("\n");
  const output: string[] = [];
  let index = 0;
  while (index < taskLines.length) {
    let end = index;
    // Grow the run while the trimmed task lines still appear, in order and adjacent, in the program.
    while (
      end < taskLines.length &&
      taskLines[end]!.trim() !== "" &&
      codeText.includes(
        `\n${taskLines
          .slice(index, end + 1)
          .map((line) => line.trim())
          .join("\n")}\n`,
      )
    )
      end++;
    if (end - index >= REPEATED_RUN_LINES) {
      output.push(`[${end - index} lines of the task are repeated verbatim in the current program below]`);
      index = end;
    } else {
      output.push(taskLines[index]!);
      index++;
    }
  }
  return output.join("\n");
}

export function describeFailure(run: Execution): string {
  const parts: string[] = [];
  if (run.error?.traceback) parts.push(`Traceback:\n${tail(run.error.traceback, FIXER_LIMITS.tracebackChars)}`);
  else if (run.error) parts.push(`Error: ${run.error.type}: ${run.error.message}`);
  if (!run.error?.traceback && run.stderr.trim())
    parts.push(`stderr (tail):\n${tail(run.stderr.trim(), FIXER_LIMITS.outputTailChars)}`);
  if (run.stdout.trim()) parts.push(`stdout (tail):\n${tail(run.stdout.trim(), FIXER_LIMITS.outputTailChars)}`);
  if (run.truncated)
    parts.push("The program printed more than the output limit: what it printed past the limit was not kept.");
  const values = valuesSection(run);
  if (values) parts.push(values);
  const network = networkReport(run.egress);
  if (network) parts.push(network);
  parts.push(
    `Exit: status ${run.status}, exit code ${run.exitCode ?? "none"}${run.signal ? `, signal ${run.signal}` : ""}`,
  );
  return parts.join("\n\n");
}

/**
 * The values the failed run computed, one line each: what the traceback cannot say about a wrong
 * result. Capped as a whole, with the cut said, so the prompt stays flat.
 */
function valuesSection(run: Execution): string | null {
  if (!run.values) return null;
  const lines = describeRuntimeValues(run.values);
  if (lines.length === 0) return null;
  let text = lines.map((line) => `- ${line}`).join("\n");
  if (text.length > FIXER_LIMITS.valuesChars) {
    text = `${text.slice(0, FIXER_LIMITS.valuesChars)}\n${cutNote(text.length - FIXER_LIMITS.valuesChars)}`;
  }
  return `Values at the failure (recorded in the run, cut and masked):\n${text}`;
}

export function buildFixerPrompt(args: {
  task: string;
  language: Language;
  code: string;
  run: Execution;
  critique?: Critique;
  errors: ErrorRecord[];
  latestFingerprint?: string;
  /** The input files and the out/ folder of a data task (describeDataFiles). */
  dataFiles?: string;
  /** How the candidates of the last round disagreed, one group a line (see chooseCandidate). */
  candidates?: string;
  /** The hosts the program may reach (the `allowHosts` setting). */
  allowHosts?: readonly AllowHostInput[];
}): BaseMessage[] {
  const system = [
    `You are an expert ${LANGUAGE_NAMES[args.language]} programmer repairing a program that failed when it ran.`,
    "Find the root cause in the traceback and the values recorded at the failure, fix it, and keep everything that already works.",
    `Reply with the complete corrected program in a single fenced \`\`\`${args.language} block: the whole file, not a diff.`,
    "Keep the program's self-checks unless they contradict the task, and keep the task's function names.",
  ].join("\n");
  const earlier = summarizeErrors(args.errors, args.latestFingerprint);
  const parts = [
    `Task:\n${taskWithoutRepeats(args.task, args.code)}`,
    ...(args.dataFiles ? [args.dataFiles] : []),
    ...[networkSection(args.language, args.allowHosts ?? [])].filter((section) => section !== null),
    args.code.trim()
      ? `Current program:\n\`\`\`${args.language}\n${args.code.trimEnd()}\n\`\`\``
      : "Current program: none yet.",
    `Latest failure: ${args.critique?.summary ?? "the run failed"}\n${describeFailure(args.run)}`,
  ];
  if (args.critique?.diagnosis) parts.push(`Diagnosis:\n${args.critique.diagnosis}`);
  if (args.candidates)
    parts.push(
      `Programs written for this task in parallel disagree; the current program is the best of the largest group:\n${args.candidates}`,
    );
  if (earlier.length > 0)
    parts.push(
      `Other errors seen earlier in this run (do not reintroduce them):\n${earlier.map((line) => `- ${line}`).join("\n")}`,
    );
  return [new SystemMessage(system), new HumanMessage(parts.join("\n\n"))];
}
