import type { Language } from "../sandbox/types.js";

export interface AssembledProgram {
  source: string;
  /** Lines 1..programLines are the program; the tests follow. */
  programLines: number;
  totalLines: number;
}

const TEST_BANNER: Record<Language, string> = {
  python: "# ---- acceptance tests ----",
  javascript: "// ---- acceptance tests ----",
};

/**
 * Tests run in the same process right after the program, the way HumanEval joins a completion
 * and its checks: the tests see the program's functions without any import convention.
 */
export function assembleProgram(code: string, tests: string | undefined, language: Language): AssembledProgram {
  const program = code.endsWith("\n") ? code : `${code}\n`;
  const programLines = program.split("\n").length - 1;
  if (!tests?.trim()) return { source: program, programLines, totalLines: programLines };
  const source = `${program}\n${TEST_BANNER[language]}\n${tests.endsWith("\n") ? tests : `${tests}\n`}`;
  return { source, programLines, totalLines: source.split("\n").length - 1 };
}

/** Where a failure at `line` happened: inside the tests or the program, and how far through. */
export function locateFailure(line: number | null | undefined, program: AssembledProgram) {
  if (!line || line < 1) return { failedInTests: false, progress: null };
  return {
    failedInTests: line > program.programLines,
    progress: Math.min(1, line / Math.max(1, program.totalLines)),
  };
}
