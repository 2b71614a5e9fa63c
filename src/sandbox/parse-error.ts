import type { Language, ParsedError } from "./types.js";

/** The file name the sandbox gives the submitted code, per language. */
export const CODE_FILE_NAME: Record<Language, string> = {
  python: "main.py",
  javascript: "main.js",
};

/**
 * Reads the error a program died with out of its stderr: a Python traceback or a Node stack trace.
 * Returns null when stderr holds no recognisable trace (e.g. `sys.exit(3)` or a plain message).
 * Paths into the run's temporary work dir are reduced to bare file names, so the same bug gives
 * the same text on every run and the fixer is not distracted by random directory names.
 */
export function parseError(
  language: Language,
  stderr: string,
  codeFileName: string = CODE_FILE_NAME[language],
): ParsedError | null {
  const text = stderr.replace(/\r\n/g, "\n");
  return language === "python" ? parsePythonError(text, codeFileName) : parseNodeError(text, codeFileName);
}

// ---------------------------------------------------------------------------------------------
// Python

const PYTHON_TRACEBACK_HEADER = /^Traceback \(most recent call last\):$/;
/** `  File "/tmp/x/main.py", line 3, in f` and, for a SyntaxError, `  File "/tmp/x/main.py", line 3`. */
const PYTHON_FRAME = /^ {2}File "(.+)", line (\d+)(?:, in .*)?$/;
const PYTHON_EXCEPTION_LINE = /^([A-Za-z_][\w.]*)(?:: ([\s\S]*))?$/;

function parsePythonError(stderr: string, codeFileName: string): ParsedError | null {
  const lines = stderr.split("\n");
  const firstHeader = lines.findIndex((line) => PYTHON_TRACEBACK_HEADER.test(line));
  const lastHeader = findLastIndex(lines, (line) => PYTHON_TRACEBACK_HEADER.test(line));
  // A SyntaxError raised while compiling main.py has no "Traceback" header, only the File line.
  const traceStart = firstHeader !== -1 ? firstHeader : lines.findIndex((line) => PYTHON_FRAME.test(line));
  if (traceStart === -1) return null;
  const lastBlockStart = lastHeader !== -1 ? lastHeader : traceStart;

  // The exception line is the first unindented line after the frames of the last block; every
  // line after it belongs to the message (multi-line messages, notes added with add_note).
  let exceptionIndex = -1;
  let line: number | null = null;
  let workDir: string | null = null;
  for (let index = lastBlockStart + (lastHeader !== -1 ? 1 : 0); index < lines.length; index++) {
    const current = lines[index] ?? "";
    const frame = PYTHON_FRAME.exec(current);
    if (frame) {
      const [, path = "", lineNumber = ""] = frame;
      if (isCodeFile(path, codeFileName)) {
        line = Number(lineNumber);
        workDir ??= directoryOf(path);
      }
      continue;
    }
    if (current === "" || /^\s/.test(current)) continue;
    exceptionIndex = index;
    break;
  }
  if (exceptionIndex === -1) return null;

  const exceptionText = lines.slice(exceptionIndex).join("\n").trimEnd();
  const match = PYTHON_EXCEPTION_LINE.exec(exceptionText);
  const type = match?.[1] ?? "Exception";
  const message = match ? (match[2] ?? "").trim() : exceptionText;
  workDir ??= findWorkDir(stderr, codeFileName);
  const traceback = stripWorkDir(lines.slice(traceStart).join("\n").trimEnd(), workDir);
  return { type, message: stripWorkDir(message, workDir), line, traceback };
}

// ---------------------------------------------------------------------------------------------
// Node

/** The location Node prints above an uncaught error: `/tmp/x/main.js:3` or `node:assert:90`. */
const NODE_LOCATION_HEADER = /^(?:file:\/\/)?((?:\/|node:)[^\s:]*(?::[^\s:]+)*?):(\d+)$/;
const NODE_STACK_FRAME = /^\s+at .*?(?:file:\/\/)?(\/[^\s()]+):(\d+):(\d+)\)?$/;
const NODE_ANY_FRAME = /^\s+at /;
const NODE_ERROR_LINE = /^([A-Za-z_$][\w$.]*)(?: \[([A-Z0-9_]+)\])?(?:: ([\s\S]*))?$/;
const NODE_NON_ERROR_HINT = /^\(Use `node --trace-uncaught/;
const NODE_VERSION_TRAILER = /^Node\.js v\d+/;
const NODE_FATAL = /^FATAL ERROR: (.*)$/m;

/** V8 aborts on heap exhaustion without a JavaScript stack; that is an error of its own kind. */
function parseNodeFatalError(stderr: string, lines: string[], workDir: string | null): ParsedError | null {
  const fatal = NODE_FATAL.exec(stderr);
  if (!fatal) return null;
  const traceStart = Math.max(
    0,
    lines.findIndex((line) => line.startsWith("<--- Last few GCs") || NODE_FATAL.test(line)),
  );
  return {
    type: "FatalError",
    message: (fatal[1] ?? "").trim(),
    line: null,
    traceback: stripWorkDir(lines.slice(traceStart).join("\n").trimEnd(), workDir),
  };
}

/** Where the `Type: message` line starts, below the location header when there is one; -1 if none. */
function findNodeMessageStart(lines: string[], headerIndex: number): number {
  if (headerIndex === -1) {
    return lines.findIndex((line, index) => NODE_ERROR_LINE.test(line) && NODE_ANY_FRAME.test(lines[index + 1] ?? ""));
  }
  // The header is followed by the offending source line and a caret line (both blank for a
  // SyntaxError at the end of the file), then a blank line, then the error itself.
  let start = headerIndex + 3;
  while (start < lines.length && (lines[start] ?? "").trim() === "") start++;
  return start;
}

/** The line of the submitted code: from the location header, else from the first stack frame in it. */
function nodeErrorLine(lines: string[], headerIndex: number, messageEnd: number, codeFileName: string): number | null {
  const header = headerIndex !== -1 ? NODE_LOCATION_HEADER.exec(lines[headerIndex] ?? "") : null;
  if (header && isCodeFile(header[1] ?? "", codeFileName)) return Number(header[2]);
  for (const current of lines.slice(messageEnd)) {
    const frame = NODE_STACK_FRAME.exec(current);
    if (frame && isCodeFile(frame[1] ?? "", codeFileName)) return Number(frame[2]);
  }
  return null;
}

function parseNodeError(stderr: string, codeFileName: string): ParsedError | null {
  const lines = stderr.split("\n");
  const workDir = findWorkDir(stderr, codeFileName);

  const fatal = parseNodeFatalError(stderr, lines, workDir);
  if (fatal) return fatal;

  const headerIndex = lines.findIndex((line) => NODE_LOCATION_HEADER.test(line));
  const messageStart = findNodeMessageStart(lines, headerIndex);
  if (messageStart === -1 || messageStart >= lines.length) return null;

  let messageEnd = messageStart;
  let thrownNonError = false;
  while (messageEnd < lines.length) {
    const current = lines[messageEnd] ?? "";
    if (NODE_ANY_FRAME.test(current) || NODE_VERSION_TRAILER.test(current)) break;
    if (NODE_NON_ERROR_HINT.test(current)) {
      thrownNonError = true;
      break;
    }
    messageEnd++;
  }
  const errorText = lines.slice(messageStart, messageEnd).join("\n").trim();

  let type = "Uncaught";
  let message = errorText;
  const match = NODE_ERROR_LINE.exec(errorText);
  const hasStack = NODE_ANY_FRAME.test(lines[messageEnd] ?? "");
  // `throw "x: y"` also looks like `Type: message`; Node's hint line tells a thrown non-Error apart.
  if (match && !thrownNonError && (hasStack || match[3] !== undefined)) {
    type = match[1] ?? type;
    message = (match[3] ?? "").trim();
  }

  const line = nodeErrorLine(lines, headerIndex, messageEnd, codeFileName);

  const traceEnd = findLastIndex(lines, (current) => NODE_VERSION_TRAILER.test(current));
  const traceLines = lines.slice(
    headerIndex !== -1 ? headerIndex : messageStart,
    traceEnd === -1 ? undefined : traceEnd,
  );
  return {
    type,
    message: stripWorkDir(message, workDir),
    line,
    traceback: stripWorkDir(traceLines.join("\n").trimEnd(), workDir),
  };
}

// ---------------------------------------------------------------------------------------------
// Shared helpers

function isCodeFile(path: string, codeFileName: string): boolean {
  return path === codeFileName || path.endsWith(`/${codeFileName}`);
}

function directoryOf(path: string): string | null {
  const slash = path.lastIndexOf("/");
  return slash > 0 ? path.slice(0, slash) : null;
}

/** The directory the code file ran from, as the trace spells it (e.g. `/tmp/selfheal-x1Y2`). */
function findWorkDir(text: string, codeFileName: string): string | null {
  const escaped = codeFileName.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const match = new RegExp(`(/[^\\s"'():]*)/${escaped}\\b`).exec(text);
  return match?.[1] ?? null;
}

function stripWorkDir(text: string, workDir: string | null): string {
  if (!workDir) return text;
  return text.split(`file://${workDir}/`).join("").split(`${workDir}/`).join("");
}

function findLastIndex<T>(items: readonly T[], predicate: (item: T) => boolean): number {
  for (let index = items.length - 1; index >= 0; index--) {
    if (predicate(items[index] as T)) return index;
  }
  return -1;
}
