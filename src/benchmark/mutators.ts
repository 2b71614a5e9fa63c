import { matchingBracket, PYTHON_KEYWORDS, type PythonToken } from "./python-tokens.js";

// The mutation operators: one small function per kind of planted bug, each looking at one token of
// the reference solution and its neighbours. Which of their mutants matter is mutants.ts's concern.

/** The kinds of bug a mutant plants, each a mistake people really make. */
export const MUTATION_OPERATORS = [
  "comparison",
  "negated-condition",
  "range-bound",
  "arithmetic",
  "membership",
  "boolean-operator",
  "return-constant",
  "index",
  "length",
  "constant",
  "swapped-builtin",
  "sort-order",
  "string-constant",
  "dropped-call",
] as const;
export type MutationOperator = (typeof MUTATION_OPERATORS)[number];

export interface Edit {
  start: number;
  end: number;
  replacement: string;
}

const COMPARISON_SWAPS: Record<string, string> = {
  "<": "<=",
  "<=": "<",
  ">": ">=",
  ">=": ">",
  "==": "!=",
  "!=": "==",
};

const ARITHMETIC_SWAPS: Record<string, string> = {
  "+": "-",
  "-": "+",
  "+=": "-=",
  "-=": "+=",
  "*": "/",
  "/": "*",
  "**": "*",
  "//": "%",
  "%": "//",
};

const BUILTIN_SWAPS: Record<string, string> = {
  min: "max",
  max: "min",
  any: "all",
  all: "any",
  lower: "upper",
  upper: "lower",
  isupper: "islower",
  islower: "isupper",
  startswith: "endswith",
  endswith: "startswith",
  ceil: "floor",
  floor: "ceil",
  swapcase: "lower",
};

/** Tokens that end a condition inside an expression: `x if COND else y`, `[x for x in y if COND]`. */
const CONDITION_ENDERS = new Set(["else", "for", "if", ","]);

/** Tokens before which an `in` is a membership test rather than the `in` of a `for`. */
const EXPRESSION_STARTERS = new Set([
  "if",
  "elif",
  "while",
  "and",
  "or",
  "not",
  "return",
  "=",
  "lambda",
  "else",
  "assert",
  "(",
  "[",
  "{",
  ":",
  "yield",
]);

/** Keywords that are values, so they end an operand like a name does (`True - x` is binary). */
const VALUE_KEYWORDS = new Set(["True", "False", "None"]);

/** Whether the token ends an operand, which makes a following `+`, `-` or `[` binary/subscript. */
function endsOperand(token: PythonToken | undefined): boolean {
  if (token === undefined) return false;
  if (token.kind === "number" || token.kind === "string") return true;
  if (token.kind === "name") return !PYTHON_KEYWORDS.has(token.text) || VALUE_KEYWORDS.has(token.text);
  return token.kind === "op" && (token.text === ")" || token.text === "]" || token.text === "}");
}

/** An `in` is membership unless it belongs to a `for` target (`for a, b in pairs`). */
function isMembershipTest(tokens: readonly PythonToken[], inIndex: number): boolean {
  const depth = tokens[inIndex]!.depth;
  for (let index = inIndex - 1; index >= 0; index -= 1) {
    const token = tokens[index]!;
    if (token.depth < depth) return true;
    if (token.depth > depth) continue;
    if (token.text === "for") return false;
    if (EXPRESSION_STARTERS.has(token.text) || token.statementStart) return true;
  }
  return true;
}

export function applyEdits(source: string, edits: readonly Edit[]): string {
  let result = source;
  for (const edit of [...edits].sort((a, b) => b.start - a.start)) {
    result = result.slice(0, edit.start) + edit.replacement + result.slice(edit.end);
  }
  return result;
}

/** Indices of top-level commas between a bracket pair (exclusive). */
function topLevelCommas(tokens: readonly PythonToken[], open: number, close: number): number[] {
  const innerDepth = tokens[open]!.depth + 1;
  const commas: number[] = [];
  for (let index = open + 1; index < close; index += 1) {
    const token = tokens[index]!;
    if (token.kind === "op" && token.text === "," && token.depth === innerDepth) commas.push(index);
  }
  return commas;
}

function quoted(text: string): string {
  return JSON.stringify(text);
}

/** One token of the solution, with what a mutator needs to look around it and record a mutant. */
export interface MutationSite {
  solution: string;
  tokens: PythonToken[];
  index: number;
  token: PythonToken;
  previous: PythonToken | undefined;
  next: PythonToken | undefined;
  add(operator: MutationOperator, description: string, edits: Edit[]): void;
}

type Mutator = (site: MutationSite) => void;

const replaceToken = (token: PythonToken, replacement: string): Edit[] => [
  { start: token.start, end: token.end, replacement },
];
const insertAt = (at: number, replacement: string): Edit => ({ start: at, end: at, replacement });

const comparisonSwap: Mutator = ({ token, add }) => {
  const comparison = COMPARISON_SWAPS[token.text];
  if (comparison !== undefined) {
    add("comparison", `${quoted(token.text)} -> ${quoted(comparison)}`, replaceToken(token, comparison));
  }
};

const arithmeticSwap: Mutator = ({ token, previous, add }) => {
  const arithmetic = ARITHMETIC_SWAPS[token.text];
  // Unary minus (`-1`, `x = -y`) is a sign, not an operation a programmer could swap.
  if (arithmetic !== undefined && (token.text.endsWith("=") || endsOperand(previous))) {
    add("arithmetic", `${quoted(token.text)} -> ${quoted(arithmetic)}`, replaceToken(token, arithmetic));
  }
};

const indexOffByOne: Mutator = ({ solution, tokens, index, token, previous, add }) => {
  if (token.text !== "[" || !endsOperand(previous)) return;
  const close = matchingBracket(tokens, index);
  const isSlice = tokens
    .slice(index + 1, close)
    .some((inner) => inner.kind === "op" && inner.text === ":" && inner.depth === token.depth + 1);
  if (close > index + 1 && !isSlice) {
    const inside = solution.slice(tokens[index + 1]!.start, tokens[close - 1]!.end);
    add("index", `[${inside}] -> [${inside} + 1]`, [insertAt(tokens[close]!.start, " + 1")]);
  }
};

/** A comprehension filter or a conditional expression: `x if c else y`, `[a for a in b if c]`. */
const negatedInlineCondition: Mutator = ({ solution, tokens, index, token, add }) => {
  if (token.text !== "if" || token.statementStart) return;
  // The condition runs to the next `else`, `for`, `if` or comma at its own depth, or to the
  // bracket that encloses it.
  let end = index + 1;
  while (end < tokens.length) {
    const candidate = tokens[end]!;
    if (candidate.depth < token.depth || candidate.statementStart) break;
    if (candidate.depth === token.depth && CONDITION_ENDERS.has(candidate.text)) break;
    end += 1;
  }
  if (end > index + 1) {
    const condition = solution.slice(tokens[index + 1]!.start, tokens[end - 1]!.end);
    add("negated-condition", `if ${condition} -> if not (${condition})`, [
      insertAt(tokens[index + 1]!.start, "not ("),
      insertAt(tokens[end - 1]!.end, ")"),
    ]);
  }
};

const membershipFlip: Mutator = ({ tokens, index, token, previous, add }) => {
  if (token.text !== "in" || !isMembershipTest(tokens, index)) return;
  if (previous?.text === "not") {
    add("membership", "not in -> in", [{ start: previous.start, end: token.start, replacement: "" }]);
  } else {
    add("membership", "in -> not in", [insertAt(token.start, "not ")]);
  }
};

const identityFlip: Mutator = ({ token, next, add }) => {
  if (token.text !== "is") return;
  if (next?.text === "not") add("membership", "is not -> is", [{ start: token.end, end: next.end, replacement: "" }]);
  else add("membership", "is -> is not", [insertAt(token.end, " not")]);
};

const lengthMinusOne: Mutator = ({ tokens, index, token, previous, next, add }) => {
  if (token.text !== "len" || next?.text !== "(" || previous?.text === "." || previous?.text === "def") return;
  const close = matchingBracket(tokens, index + 1);
  if (close > index + 2) add("length", "len(...) -> len(...) - 1", [insertAt(tokens[close]!.end, " - 1")]);
};

const reversedSort: Mutator = ({ tokens, index, token, next, add }) => {
  if ((token.text !== "sorted" && token.text !== "sort") || next?.text !== "(") return;
  const close = matchingBracket(tokens, index + 1);
  const hasReverse = tokens.slice(index + 2, close).some((inner) => inner.text === "reverse");
  if (close > index && !hasReverse) {
    const separator = close === index + 2 ? "" : ", ";
    add("sort-order", `${token.text}() -> ${token.text}(reverse=True)`, [
      insertAt(tokens[close]!.start, `${separator}reverse=True`),
    ]);
  }
};

/** `f(x)` -> `(x)`: a forgotten step, such as a missing sort, abs or second pass. */
const droppedCall: Mutator = ({ solution, tokens, index, token, previous, next, add }) => {
  if (next?.text !== "(" || PYTHON_KEYWORDS.has(token.text) || previous?.text === "def" || previous?.text === ".") {
    return;
  }
  const close = matchingBracket(tokens, index + 1);
  const single =
    close > index + 2 &&
    topLevelCommas(tokens, index + 1, close).length === 0 &&
    !tokens
      .slice(index + 2, close)
      .some((inner) => inner.depth === token.depth + 1 && (inner.text === "=" || inner.text === "for"));
  if (single) {
    const argument = solution.slice(tokens[index + 2]!.start, tokens[close - 1]!.end);
    add("dropped-call", `${token.text}(${argument}) -> (${argument})`, [
      { start: token.start, end: token.end, replacement: "" },
    ]);
  }
};

const negatedStatementCondition: Mutator = ({ solution, tokens, index, token, add }) => {
  if (!token.statementStart || (token.text !== "if" && token.text !== "elif" && token.text !== "while")) return;
  const colon = tokens.findIndex(
    (candidate, at) =>
      at > index && candidate.kind === "op" && candidate.text === ":" && candidate.depth === token.depth,
  );
  if (colon > index + 1) {
    const condition = solution.slice(tokens[index + 1]!.start, tokens[colon - 1]!.end);
    add("negated-condition", `${token.text} ${condition}: -> ${token.text} not (${condition}):`, [
      insertAt(tokens[index + 1]!.start, "not ("),
      insertAt(tokens[colon - 1]!.end, ")"),
    ]);
  }
};

const booleanOperatorSwap: Mutator = ({ token, add }) => {
  if (token.text !== "and" && token.text !== "or") return;
  const swapped = token.text === "and" ? "or" : "and";
  add("boolean-operator", `${token.text} -> ${swapped}`, replaceToken(token, swapped));
};

const rangeBound: Mutator = ({ solution, tokens, index, token, next, add }) => {
  if (token.text !== "range" || next?.text !== "(") return;
  const close = matchingBracket(tokens, index + 1);
  if (close <= index + 2) return;
  const commas = topLevelCommas(tokens, index + 1, close);
  const stopEnd = commas.length === 0 ? tokens[close - 1]!.end : tokens[commas[1] ?? close]!.start;
  const trimmedStopEnd = solution.slice(0, stopEnd).trimEnd().length;
  add("range-bound", "range stop + 1", [insertAt(trimmedStopEnd, " + 1")]);
  if (commas.length === 0) {
    add("range-bound", "range stop - 1", [insertAt(trimmedStopEnd, " - 1")]);
  } else {
    const startEnd = solution.slice(0, tokens[commas[0]!]!.start).trimEnd().length;
    add("range-bound", "range start + 1", [insertAt(startEnd, " + 1")]);
  }
};

const builtinSwap: Mutator = ({ token, next, add }) => {
  const builtin = BUILTIN_SWAPS[token.text];
  if (builtin !== undefined && next?.text === "(") {
    add("swapped-builtin", `${token.text}() -> ${builtin}()`, replaceToken(token, builtin));
  }
};

const booleanConstantFlip: Mutator = ({ token, previous, add }) => {
  if (token.text !== "True" && token.text !== "False") return;
  const swapped = token.text === "True" ? "False" : "True";
  add(
    previous?.text === "return" ? "return-constant" : "constant",
    `${token.text} -> ${swapped}`,
    replaceToken(token, swapped),
  );
};

const returnNoneAsZero: Mutator = ({ token, previous, add }) => {
  if (token.text === "None" && previous?.text === "return") {
    add("return-constant", "return None -> return 0", replaceToken(token, "0"));
  }
};

const numberBump: Mutator = ({ token, previous, add }) => {
  if (!/^(?:\d+|\d+\.\d*)$/.test(token.text)) return;
  const bumped = token.text.includes(".") ? (Number(token.text) + 1).toFixed(1) : String(Number(token.text) + 1);
  add(
    previous?.text === "return" ? "return-constant" : "constant",
    `${token.text} -> ${bumped}`,
    replaceToken(token, bumped),
  );
};

const stringChange: Mutator = ({ token, previous, add }) => {
  if (!/^['"]/.test(token.text) || token.text.startsWith(token.text[0]!.repeat(3))) return;
  const quote = token.text[0]!;
  const body = token.text.slice(1, -1);
  const replacement = body === "" ? `${quote} ${quote}` : `${quote}${body}x${quote}`;
  const operator = previous?.text === "return" ? "return-constant" : "string-constant";
  add(operator, `${token.text} -> ${replacement}`, replaceToken(token, replacement));
};

/** Which mutators look at which kind of token, in the order their mutants are listed. */
export const MUTATORS_BY_KIND: Partial<Record<PythonToken["kind"], Mutator[]>> = {
  op: [comparisonSwap, arithmeticSwap, indexOffByOne],
  name: [
    negatedInlineCondition,
    membershipFlip,
    identityFlip,
    lengthMinusOne,
    reversedSort,
    droppedCall,
    negatedStatementCondition,
    booleanOperatorSwap,
    rangeBound,
    builtinSwap,
    booleanConstantFlip,
    returnNoneAsZero,
  ],
  number: [numberBump],
  string: [stringChange],
};
