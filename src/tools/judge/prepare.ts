import { randomBytes } from "node:crypto";
import type { Language, TestIsolation } from "../../core/run-result.js";
import { type AssembledProgram, assembleProgram, completionMarkFor } from "../assemble.js";
import {
  instrumentProgram,
  pythonLiteral,
  pythonValuesConfig,
  type ValuesOptions,
} from "../runtime-values/instrument.js";
import { PYTHON_JUDGE } from "./python-judge.js";

/**
 * Definitions of the task that its tests use and that the test process must take from the task, not
 * from the program: HumanEval/32's `check` calls the prompt's `poly`, which a completion could
 * redefine. The source runs in the test process before the tests, without the functions in `omit`
 * (the one the program must write).
 */
export interface TaskHelpers {
  source: string;
  omit: readonly string[];
}

export interface PrepareOptions {
  /** Defaults to `process`; JavaScript tests run `shared` whatever is asked, and the result says so. */
  isolation?: TestIsolation;
  /** Record runtime values for the fixer; null or absent: none. */
  values?: ValuesOptions | null;
  helpers?: TaskHelpers;
}

/** A program and its tests made ready for one sandbox run: what to run, and how to read what it left. */
export interface PreparedProgram {
  /** main.py's text, the files beside it and the stdin: a `RunRequest`'s own fields. */
  code: string;
  files?: Record<string, string>;
  stdin?: string;
  /** The layout and completion mark the run's result is settled against (`settleCompletion`, `locateFailure`). */
  assembled: AssembledProgram;
  /** With tests: how they were joined to the program. */
  isolation?: TestIsolation;
  /** The nonce of this run's runtime-values line, when values are recorded. */
  valuesNonce?: string;
}

const JUDGE_FILE = ".selfheal-judge.py";
/** Between the judge and the program in the judge's file; main.py's line compiles what is above it. */
const PROGRAM_SEPARATOR = "\n#selfheal-program#\n";

/**
 * main.py under process isolation: one line that runs the judge, which writes the program back over
 * main.py (so the program, its tracebacks and its `__file__` see the program alone) before it forks.
 */
const JUDGE_LINE = `(lambda p, s, g: (exec(compile(open(p, "rb").read().partition(s)[0], p, "exec"), g), g["_judge"](p, s)))(__import__("os").path.join(__import__("os").path.dirname(__file__), "${JUDGE_FILE}"), ${JSON.stringify(PROGRAM_SEPARATOR)}.encode(), {"__name__": "selfheal_judge"})\n`;

/**
 * The program and its tests as one sandbox run. With Python tests and `process` isolation (the
 * default), the tests run in a process of their own (`PYTHON_JUDGE`): the program cannot read them,
 * the completion secret or the comparison. Otherwise they are appended to the program, as before.
 */
export function prepareProgram(
  code: string,
  tests: string | undefined,
  language: Language,
  options: PrepareOptions = {},
): PreparedProgram {
  const isolation = tests?.trim() ? (language === "python" ? (options.isolation ?? "process") : "shared") : undefined;
  if (isolation === "process" && tests) return prepareIsolated(code, tests, options);
  const assembled = assembleProgram(code, tests, language);
  const instrumented = options.values ? instrumentProgram(assembled, language, options.values) : null;
  return {
    code: instrumented?.code ?? assembled.source,
    ...(instrumented ? { files: instrumented.files } : {}),
    assembled,
    ...(isolation ? { isolation } : {}),
    ...(instrumented ? { valuesNonce: instrumented.nonce } : {}),
  };
}

function prepareIsolated(code: string, tests: string, options: PrepareOptions): PreparedProgram {
  const program = code.endsWith("\n") ? code : `${code}\n`;
  const programLines = program.split("\n").length - 1;
  const testText = tests.endsWith("\n") ? tests : `${tests}\n`;
  // The same layout as an assembled program (program, a blank line, the banner, the tests), so line
  // numbers, `locateFailure` and the fixer read a traceback from either the same way.
  const firstLine = programLines + 3;
  const totalLines = firstLine - 1 + testText.split("\n").length - 1;
  const nonce = randomBytes(16).toString("hex");
  const valuesNonce = options.values ? randomBytes(8).toString("hex") : undefined;
  const values = options.values
    ? pythonValuesConfig(valuesNonce as string, {
        calls: options.values.calls,
        testsFrom: firstLine,
        testsTo: totalLines,
      })
    : null;
  const stdin = JSON.stringify({
    nonce,
    tests: testText,
    firstLine,
    ...(options.helpers ? { helpers: options.helpers.source, omit: options.helpers.omit } : {}),
  });
  return {
    code: JUDGE_LINE,
    files: { [JUDGE_FILE]: `VALUES = ${pythonLiteral(values)}\n${PYTHON_JUDGE}${PROGRAM_SEPARATOR}${program}` },
    stdin,
    assembled: { source: program, programLines, totalLines, completionMark: completionMarkFor(nonce) },
    isolation: "process",
    ...(valuesNonce ? { valuesNonce } : {}),
  };
}
