import { randomBytes } from "node:crypto";
import { SECRET_NAME_PATTERN, SECRET_VALUE_PATTERNS } from "../../core/secrets.js";
import type { Language } from "../../sandbox/types.js";
import type { AssembledProgram } from "../assemble.js";
import { NODE_VALUES_HARNESS } from "./node-harness.js";
import { PYTHON_VALUES_HARNESS } from "./python-harness.js";

/** Starts the one line a harness writes on fd 2; RS first, like the completion mark, never printed by accident. */
export const VALUES_PREFIX = "\x1eselfheal-values:";

/** What the harness shows inside the sandbox: each value's characters, items and depth, and how much of it. */
export const HARNESS_LIMITS = { chars: 160, items: 8, depth: 3, frames: 3, locals: 10, calls: 3 } as const;

const PYTHON_HARNESS_FILE = ".selfheal-harness.py";
/** The line between the harness and the program in that one file; the loader compiles what is above it. */
const PYTHON_PROGRAM_SEPARATOR = "\n#selfheal-program#\n";
export const NODE_HARNESS_FILE = ".selfheal-harness.cjs";

export interface ValuesOptions {
  /** Record the calls the tests make of the program's functions (Python only). */
  calls: boolean;
}

/** A program ready for the sandbox with its harness: main's text, the extra files, and the nonce its values line carries. */
export interface InstrumentedProgram {
  code: string;
  files: Record<string, string>;
  nonce: string;
}

/** The first line of a test, after the program, the blank line and the banner (see assembleProgram). */
const testsFrom = (program: AssembledProgram): number =>
  program.totalLines > program.programLines ? program.programLines + 3 : Number.MAX_SAFE_INTEGER;

/**
 * The assembled program with the runtime-values harness around it, or null where none fits (a
 * Node program that is an ES module or starts with `#!`: it runs as assembled). The program keeps
 * its line numbers, and the completion statement stays the last thing that runs.
 */
export function instrumentProgram(
  program: AssembledProgram,
  language: Language,
  options: ValuesOptions,
): InstrumentedProgram | null {
  const nonce = randomBytes(8).toString("hex");
  if (language === "python") {
    const hasTests = program.totalLines > program.programLines;
    const config = {
      ...pythonValuesConfig(nonce, {
        calls: options.calls && hasTests,
        testsFrom: testsFrom(program),
        testsTo: program.totalLines,
      }),
      asserts: /\bassert\b/.test(program.source),
    };
    return {
      // One line: it runs the harness, which puts the program back in main.py's place before it runs.
      code: `exec((lambda p: compile(open(p, "rb").read().partition(${JSON.stringify(PYTHON_PROGRAM_SEPARATOR)}.encode())[0], p, "exec"))(__import__("os").path.join(__import__("os").path.dirname(__file__), "${PYTHON_HARNESS_FILE}")), {"__name__": "selfheal_harness"})\n`,
      files: {
        [PYTHON_HARNESS_FILE]: `CONFIG = ${pythonLiteral(config)}\n${PYTHON_VALUES_HARNESS}${PYTHON_PROGRAM_SEPARATOR}${program.source}`,
      },
      nonce,
    };
  }
  const code = withNodePrefix(program.source, `require("./${NODE_HARNESS_FILE}");`);
  if (code === null) return null;
  return { code, files: nodeHarnessFiles(nonce), nonce };
}

/** The Node harness's file for one run, settings and all. */
export function nodeHarnessFiles(nonce: string): Record<string, string> {
  const config = { nonce, limits: HARNESS_LIMITS, secrets: SECRET_VALUE_PATTERNS, secretNames: SECRET_NAME_PATTERN };
  return { [NODE_HARNESS_FILE]: `"use strict";\nconst CONFIG = ${JSON.stringify(config)};\n${NODE_VALUES_HARNESS}` };
}

/**
 * The Python harness's settings for one run: what to cut and mask, and where the tests are (the
 * judge's two processes each decide for themselves whether their side has an assert to rewrite).
 */
export function pythonValuesConfig(
  nonce: string,
  where: { calls: boolean; testsFrom: number; testsTo: number },
): Record<string, unknown> {
  return {
    nonce,
    limits: HARNESS_LIMITS,
    secrets: SECRET_VALUE_PATTERNS,
    secretNames: SECRET_NAME_PATTERN,
    asserts: true,
    ...where,
  };
}

/**
 * The source with `statement` at the start of line 1, after a "use strict" directive there (which
 * must stay first to count). Null for a `#!` line or ES module syntax, where no prefix is safe.
 */
function withNodePrefix(source: string, statement: string): string | null {
  if (source.startsWith("#!") || /^\s*(?:import\s*[\w{*"'(]|export\s)/m.test(source)) return null;
  const directive = /^\s*(["'])use strict\1\s*;?/.exec(source);
  if (directive)
    return `${directive[0]}${directive[0].trimEnd().endsWith(";") ? "" : ";"}${statement}${source.slice(directive[0].length)}`;
  return `${statement}${source}`;
}

/** JSON as a Python literal: the same strings and numbers, with Python's names for true, false and null. */
export function pythonLiteral(value: unknown): string {
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (Array.isArray(value)) return `[${value.map(pythonLiteral).join(", ")}]`;
  if (typeof value === "object") {
    return `{${Object.entries(value)
      .map(([key, item]) => `${JSON.stringify(key)}: ${pythonLiteral(item)}`)
      .join(", ")}}`;
  }
  return JSON.stringify(value);
}
