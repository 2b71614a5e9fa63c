import { randomBytes } from "node:crypto";
import type { ExitCall } from "../core/state.js";
import type { Language, RunResult } from "../sandbox/types.js";

export interface AssembledProgram {
  source: string;
  /** Lines 1..programLines are the program; the tests follow. */
  programLines: number;
  totalLines: number;
  /**
   * With tests: what the line after the last test writes on stderr, so the runner can tell that
   * the tests ran to their end in this run. A fresh nonce each time; see `settleCompletion`.
   */
  completionMark?: string;
}

/**
 * The line between the program and the banner: a statement that closes what a program text left
 * open for the tests to finish (a trailing decorator or `if 0:` in Python, a trailing `if (0)`
 * in JavaScript), so such a splice is a syntax error of the program instead of a test swallowed.
 */
const PROGRAM_END: Record<Language, string> = { python: "pass", javascript: ";" };

const TEST_BANNER: Record<Language, string> = {
  python: "# ---- acceptance tests ----",
  javascript: "// ---- acceptance tests ----",
};

/**
 * Starts the mark with a control character (RS) that the source spells as an escape, so a program
 * that prints its own source prints `\x1e`, four characters, never the mark itself.
 */
const MARK_PREFIX = "\x1eselfheal-tests-done:";

/**
 * The statement after the tests. It writes to file descriptor 2 directly (Python's `os.write`,
 * Node's synchronous pipe write), past any `sys.stderr` a program replaced, and only if control
 * reaches it: an exit, an uncaught error or a killed process leaves no mark.
 */
const COMPLETION_STATEMENT: Record<Language, (nonce: string) => string> = {
  python: (nonce) => `__import__("os").write(2, b"\\x1eselfheal-tests-done:${nonce}\\n")`,
  javascript: (nonce) => `;process.stderr.write("\\x1eselfheal-tests-done:${nonce}\\n");`,
};

/**
 * Tests run in the same process right after the program, the way HumanEval joins a completion
 * and its checks: the tests see the program's functions without any import convention. A last
 * line, after the tests, proves they finished.
 */
export function assembleProgram(code: string, tests: string | undefined, language: Language): AssembledProgram {
  const program = code.endsWith("\n") ? code : `${code}\n`;
  const programLines = program.split("\n").length - 1;
  if (!tests?.trim()) return { source: program, programLines, totalLines: programLines };
  const nonce = randomBytes(16).toString("hex");
  const body = `${program}${PROGRAM_END[language]}\n${TEST_BANNER[language]}\n${tests.endsWith("\n") ? tests : `${tests}\n`}`;
  const source = `${body}${COMPLETION_STATEMENT[language](nonce)}\n`;
  return {
    source,
    programLines,
    totalLines: body.split("\n").length - 1,
    completionMark: completionMarkFor(nonce),
  };
}

/** The line that proves the tests of a run ran to their end, for that run's nonce. */
export function completionMarkFor(nonce: string): string {
  return `${MARK_PREFIX}${nonce}\n`;
}

/**
 * The run as the program left it: the completion mark taken out of stderr, and whether it was
 * there. Without tests there is no mark and `testsCompleted` stays unset.
 */
export function settleCompletion(
  result: RunResult,
  program: AssembledProgram,
): RunResult & { testsCompleted?: boolean } {
  const mark = program.completionMark;
  if (!mark) return result;
  const at = result.stderr.lastIndexOf(mark);
  if (at === -1) return { ...result, testsCompleted: false };
  return {
    ...result,
    stderr: result.stderr.slice(0, at) + result.stderr.slice(at + mark.length),
    testsCompleted: true,
  };
}

/** A streamed line without the completion mark, or null when the mark was all there was. */
export function withoutCompletionMark(line: string): string | null {
  const at = line.indexOf(MARK_PREFIX);
  if (at === -1) return line;
  const rest = line.slice(0, at);
  return rest === "" ? null : rest;
}

/** Calls that end the process, by language; matched on code with comments and strings blanked. */
const EXIT_CALLS: Record<Language, RegExp> = {
  python: /(?<![\w.])(?:sys\.exit|os\._exit|exit|quit|os\.abort)\s*\(|\braise\s+SystemExit\b/,
  javascript: /\bprocess\s*\.\s*(?:exit|reallyExit|abort)\s*\(|\bprocess\s*\.\s*exitCode\s*=(?!=)/,
};

/**
 * The program's own lines that end the process, found in its text: where to look when the tests
 * did not finish. A hint for the fixer, not evidence; the missing mark is the evidence.
 */
export function findExitCalls(code: string, language: Language): ExitCall[] {
  const calls: ExitCall[] = [];
  code.split("\n").forEach((line, index) => {
    if (EXIT_CALLS[language].test(blankCommentsAndStrings(line, language))) {
      calls.push({ line: index + 1, text: line.trim().slice(0, 80) });
    }
  });
  return calls;
}

/** One line with its string literals emptied and its trailing comment dropped (a line-local approximation). */
function blankCommentsAndStrings(line: string, language: Language): string {
  const strings = /"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`(?:[^`\\]|\\.)*`/g;
  const blanked = line.replace(strings, '""');
  const comment = language === "python" ? blanked.indexOf("#") : blanked.indexOf("//");
  return comment === -1 ? blanked : blanked.slice(0, comment);
}

/** Where a failure at `line` happened: inside the tests or the program, and how far through. */
export function locateFailure(line: number | null | undefined, program: AssembledProgram) {
  if (!line || line < 1) return { failedInTests: false, progress: null };
  return {
    failedInTests: line > program.programLines,
    progress: Math.min(1, line / Math.max(1, program.totalLines)),
  };
}
