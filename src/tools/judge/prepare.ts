import { randomBytes } from "node:crypto";
import type { Language, TestIsolation } from "../../core/run-result.js";
import {
  NODE_JUDGE_AHEAD_KEY,
  NODE_JUDGE_SUPPORT_FILE,
  PYTHON_JUDGE_LINE,
  PYTHON_JUDGE_SUPPORT_FILE,
  PYTHON_JUDGED_PROGRAM_FILE,
  provideSupportFile,
} from "../../sandbox/host/bootstrap.js";
import { type AssembledProgram, assembleProgram, completionMarkFor } from "../assemble.js";
import {
  instrumentProgram,
  nodeHarnessFiles,
  pythonValuesConfig,
  type ValuesOptions,
} from "../runtime-values/instrument.js";
import { NODE_JUDGE, NODE_JUDGE_FILES, NODE_SCOPE_LINE } from "./node-judge.js";
import { NODE_PROGRAM_SIDE } from "./node-program.js";
import { PYTHON_JUDGE, PYTHON_JUDGE_FILE } from "./python-judge.js";

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
  /** Defaults to `process`. */
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
  const isolation = tests?.trim() ? (options.isolation ?? "process") : undefined;
  if (isolation === "process" && tests) {
    return language === "python" ? prepareIsolated(code, tests, options) : prepareIsolatedNode(code, tests, options);
  }
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

/**
 * Where the tests go in an isolated run: the same layout as an assembled program (the program, a
 * line that closes it, the banner, the tests), so line numbers, `locateFailure` and the fixer read a
 * traceback from either the same way.
 */
function isolatedLayout(code: string, tests: string) {
  const program = code.endsWith("\n") ? code : `${code}\n`;
  const programLines = program.split("\n").length - 1;
  const testText = tests.endsWith("\n") ? tests : `${tests}\n`;
  const firstLine = programLines + 3;
  const totalLines = firstLine - 1 + testText.split("\n").length - 1;
  const nonce = randomBytes(16).toString("hex");
  return { program, programLines, testText, firstLine, totalLines, nonce };
}

function prepareIsolated(code: string, tests: string, options: PrepareOptions): PreparedProgram {
  // For the warm interpreters started from now on: the judge compiled while they wait.
  provideSupportFile(PYTHON_JUDGE_SUPPORT_FILE, PYTHON_JUDGE);
  const { program, programLines, testText, firstLine, totalLines, nonce } = isolatedLayout(code, tests);
  const valuesNonce = options.values ? randomBytes(8).toString("hex") : undefined;
  const values = options.values
    ? pythonValuesConfig(valuesNonce as string, {
        calls: options.values.calls,
        testsFrom: firstLine,
        testsTo: totalLines,
      })
    : null;
  const payload = JSON.stringify({
    nonce,
    tests: testText,
    firstLine,
    ...(options.helpers ? { helpers: options.helpers.source, omit: options.helpers.omit } : {}),
  });
  // Its length first: the test process reads the payload whole without waiting for stdin's end,
  // which comes a turn of the host's loop later.
  const stdin = `${Buffer.byteLength(payload)}\n${payload}`;
  return {
    // The same line and judge for every run (a warm interpreter holds both compiled): what differs
    // is in the judged program's file.
    code: PYTHON_JUDGE_LINE,
    files: { [PYTHON_JUDGE_FILE]: PYTHON_JUDGE, [PYTHON_JUDGED_PROGRAM_FILE]: `${JSON.stringify(values)}\n${program}` },
    stdin,
    assembled: { source: program, programLines, totalLines, completionMark: completionMarkFor(nonce) },
    isolation: "process",
    ...(valuesNonce ? { valuesNonce } : {}),
  };
}

/**
 * main.js under process isolation for JavaScript: one line that starts the judge (node-judge.ts),
 * from the code a pool's interpreter compiled ahead where it did (bootstrap.ts), else required.
 */
const NODE_JUDGE_LINE = `(globalThis[Symbol.for("${NODE_JUDGE_AHEAD_KEY}")] || require)(require("node:path").join(__dirname, "${NODE_JUDGE_FILES.judge}"));\n`;

/**
 * JavaScript tests in a process of their own: the test side (NODE_JUDGE) starts the program with
 * the program side preloaded (NODE_PROGRAM_SIDE) and runs the tests against its names.
 */
function prepareIsolatedNode(code: string, tests: string, options: PrepareOptions): PreparedProgram {
  // For the interpreters warmed from now on, which compile it while they wait.
  provideSupportFile(NODE_JUDGE_SUPPORT_FILE, NODE_JUDGE);
  const { program, programLines, testText, firstLine, totalLines, nonce } = isolatedLayout(code, tests);
  const valuesNonce = options.values ? randomBytes(8).toString("hex") : undefined;
  return {
    // The judge loads the values harness itself, in the process that runs the tests.
    code: NODE_JUDGE_LINE,
    files: {
      [NODE_JUDGE_FILES.judge]: NODE_JUDGE,
      [NODE_JUDGE_FILES.programSide]: NODE_PROGRAM_SIDE,
      // The line after the program closes what it left open, as in an assembled program.
      [NODE_JUDGE_FILES.program]: `${program};\n${NODE_SCOPE_LINE}`,
      ...(valuesNonce ? nodeHarnessFiles(valuesNonce) : {}),
    },
    stdin: JSON.stringify({ nonce, tests: testText, firstLine }),
    assembled: { source: program, programLines, totalLines, completionMark: completionMarkFor(nonce) },
    isolation: "process",
    ...(valuesNonce ? { valuesNonce } : {}),
  };
}
