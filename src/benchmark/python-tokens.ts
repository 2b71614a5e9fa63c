/**
 * A small Python tokenizer, just enough for source-level mutation: it must never mistake a
 * `<` inside a string or a comment for an operator, and it must know bracket depth so a
 * condition's closing `:` is not confused with a slice's.
 */

export type PythonTokenKind = "name" | "number" | "string" | "op" | "comment" | "newline";

export interface PythonToken {
  kind: PythonTokenKind;
  text: string;
  /** Offset of the first character in the source. */
  start: number;
  /** Offset just past the last character. */
  end: number;
  /** 1-based line of `start`. */
  line: number;
  /** Bracket depth before this token (an opening bracket has the outer depth). */
  depth: number;
  /** True for the first significant token of a logical line (a statement start). */
  statementStart: boolean;
}

const OPERATORS = [
  "**=",
  "//=",
  ">>=",
  "<<=",
  "...",
  "->",
  ":=",
  "==",
  "!=",
  "<=",
  ">=",
  "**",
  "//",
  "<<",
  ">>",
  "+=",
  "-=",
  "*=",
  "/=",
  "%=",
  "&=",
  "|=",
  "^=",
  "@=",
  "+",
  "-",
  "*",
  "/",
  "%",
  "@",
  "&",
  "|",
  "^",
  "~",
  "<",
  ">",
  "(",
  ")",
  "[",
  "]",
  "{",
  "}",
  ",",
  ":",
  ".",
  ";",
  "=",
];

export const PYTHON_KEYWORDS = new Set([
  "False",
  "None",
  "True",
  "and",
  "as",
  "assert",
  "async",
  "await",
  "break",
  "class",
  "continue",
  "def",
  "del",
  "elif",
  "else",
  "except",
  "finally",
  "for",
  "from",
  "global",
  "if",
  "import",
  "in",
  "is",
  "lambda",
  "nonlocal",
  "not",
  "or",
  "pass",
  "raise",
  "return",
  "try",
  "while",
  "with",
  "yield",
]);

const STRING_PREFIX = /^(?:[rRbBuUfF]{1,2})$/;
const NAME_START = /[A-Za-z_\u00c0-\uffff]/;
const NAME_CHAR = /[A-Za-z0-9_\u00c0-\uffff]/;
const NUMBER =
  /^(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d[\d_]*)?[jJ]?)/;

/** Length of the string literal that opens at `offset` (quote char there), or throws if unterminated. */
function stringLength(source: string, offset: number): number {
  const quote = source[offset];
  const triple = source.startsWith(quote!.repeat(3), offset);
  const closer = triple ? quote!.repeat(3) : quote!;
  let index = offset + closer.length;
  while (index < source.length) {
    const char = source[index];
    if (char === "\\") {
      index += 2;
      continue;
    }
    if (!triple && char === "\n") break;
    if (source.startsWith(closer, index)) return index + closer.length - offset;
    index += 1;
  }
  throw new SyntaxError(`unterminated string literal at offset ${offset}`);
}

export function tokenizePython(source: string): PythonToken[] {
  const tokens: PythonToken[] = [];
  let offset = 0;
  let line = 1;
  let depth = 0;
  let atStatementStart = true;

  const push = (kind: PythonTokenKind, length: number): void => {
    const text = source.slice(offset, offset + length);
    const significant = kind !== "comment" && kind !== "newline";
    tokens.push({
      kind,
      text,
      start: offset,
      end: offset + length,
      line,
      depth,
      statementStart: significant && atStatementStart,
    });
    if (significant) atStatementStart = false;
    line += text.split("\n").length - 1;
    offset += length;
  };

  while (offset < source.length) {
    const char = source[offset]!;
    if (char === "\n") {
      // Inside brackets a newline only continues the expression.
      if (depth === 0) {
        push("newline", 1);
        atStatementStart = true;
      } else {
        line += 1;
        offset += 1;
      }
      continue;
    }
    if (char === " " || char === "\t" || char === "\r" || char === "\f") {
      offset += 1;
      continue;
    }
    if (char === "\\" && source[offset + 1] === "\n") {
      line += 1;
      offset += 2;
      continue;
    }
    if (char === "#") {
      const newline = source.indexOf("\n", offset);
      push("comment", (newline === -1 ? source.length : newline) - offset);
      continue;
    }
    if (char === "'" || char === '"') {
      push("string", stringLength(source, offset));
      continue;
    }
    if (/\d/.test(char) || (char === "." && /\d/.test(source[offset + 1] ?? ""))) {
      const match = NUMBER.exec(source.slice(offset));
      push("number", match![0].length);
      continue;
    }
    if (NAME_START.test(char)) {
      let end = offset + 1;
      while (end < source.length && NAME_CHAR.test(source[end]!)) end += 1;
      const word = source.slice(offset, end);
      const next = source[end];
      if (STRING_PREFIX.test(word) && (next === "'" || next === '"')) {
        push("string", end - offset + stringLength(source, end));
      } else {
        push("name", end - offset);
      }
      continue;
    }
    const operator = OPERATORS.find((candidate) => source.startsWith(candidate, offset));
    if (operator === undefined) throw new SyntaxError(`unexpected character ${JSON.stringify(char)} at line ${line}`);
    if (operator === ")" || operator === "]" || operator === "}") depth = Math.max(0, depth - 1);
    push("op", operator.length);
    if (operator === "(" || operator === "[" || operator === "{") depth += 1;
  }
  return tokens;
}

/** The tokens that carry meaning: no comments, no newlines. */
export function significantTokens(tokens: readonly PythonToken[]): PythonToken[] {
  return tokens.filter((token) => token.kind !== "comment" && token.kind !== "newline");
}

/** Index of the bracket that closes the one at `openIndex` in `tokens`, or -1. */
export function matchingBracket(tokens: readonly PythonToken[], openIndex: number): number {
  const open = tokens[openIndex];
  if (open === undefined) return -1;
  for (let index = openIndex + 1; index < tokens.length; index += 1) {
    const token = tokens[index]!;
    if (token.kind === "op" && token.depth === open.depth && /^[)\]}]$/.test(token.text)) return index;
  }
  return -1;
}
