import type { Sandbox } from "../index.js";
import { buildProbeProgram, type ProbeVerdict, parseProbeOutput } from "./behaviour-probe.js";
import type { BenchmarkTask } from "./dataset.js";
import {
  matchingBracket,
  PYTHON_KEYWORDS,
  type PythonToken,
  significantTokens,
  tokenizePython,
} from "./python-tokens.js";

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

export interface MutantCandidate {
  /** Stable id within a task: `<operator>@<line>:<n>`. */
  id: string;
  operator: MutationOperator;
  /** 1-based line in `canonical_solution`. */
  line: number;
  /** Human-readable edit, e.g. `line 3: "<" -> "<="`. */
  description: string;
  /** The whole mutated solution body. */
  solution: string;
}

export interface EffectiveMutant extends MutantCandidate {
  /** How it differs from the reference on the hidden tests' own calls. */
  difference: Exclude<ProbeVerdict["difference"], null>;
  /** First observed difference, for the report. */
  detail: string;
}

interface Edit {
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

function applyEdits(source: string, edits: readonly Edit[]): string {
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
interface MutationSite {
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
const MUTATORS_BY_KIND: Partial<Record<PythonToken["kind"], Mutator[]>> = {
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

interface FoundMutation {
  operator: MutationOperator;
  line: number;
  description: string;
  edits: Edit[];
}

/**
 * Every single-edit mutant of `solution`, in source order per operator. Pure text work: it does
 * not know yet whether a mutant compiles or changes behaviour; `findEffectiveMutants` runs them.
 */
export function generateMutantCandidates(solution: string): MutantCandidate[] {
  let tokens: PythonToken[];
  try {
    tokens = significantTokens(tokenizePython(solution));
  } catch {
    // A solution our tokenizer cannot read gets no mutants; the verify report names the task.
    return [];
  }
  const found: FoundMutation[] = [];
  tokens.forEach((token, index) => {
    const add = (operator: MutationOperator, description: string, edits: Edit[]): void => {
      found.push({ operator, line: token.line, description: `line ${token.line}: ${description}`, edits });
    };
    const site: MutationSite = {
      solution,
      tokens,
      index,
      token,
      previous: tokens[index - 1],
      next: tokens[index + 1],
      add,
    };
    for (const mutate of MUTATORS_BY_KIND[token.kind] ?? []) mutate(site);
  });
  return distinctCandidates(solution, found);
}

/** Applies each mutation, drops the ones that give a program already seen, and names the rest. */
function distinctCandidates(solution: string, found: FoundMutation[]): MutantCandidate[] {
  const counters = new Map<string, number>();
  const seenSolutions = new Set<string>([solution]);
  const candidates: MutantCandidate[] = [];
  for (const mutation of found) {
    const mutated = applyEdits(solution, mutation.edits);
    if (seenSolutions.has(mutated)) continue;
    seenSolutions.add(mutated);
    const key = `${mutation.operator}@${mutation.line}`;
    const ordinal = (counters.get(key) ?? 0) + 1;
    counters.set(key, ordinal);
    candidates.push({
      id: `${key}:${ordinal}`,
      operator: mutation.operator,
      line: mutation.line,
      description: mutation.description,
      solution: mutated,
    });
  }
  return candidates;
}

/**
 * Takes items round-robin across operators (in `MUTATION_OPERATORS` order), so a capped
 * selection covers many kinds of bug instead of every `<` in a long function.
 */
export function interleaveByOperator<T extends { operator: MutationOperator }>(items: readonly T[]): T[] {
  const queues = MUTATION_OPERATORS.map((operator) => items.filter((item) => item.operator === operator));
  const result: T[] = [];
  for (let round = 0; result.length < items.length; round += 1) {
    for (const queue of queues) {
      const item = queue[round];
      if (item !== undefined) result.push(item);
    }
  }
  return result;
}

export interface FindMutantsOptions {
  /** Effective mutants to keep per task. */
  maxMutants?: number;
  /** Candidates tried per task; bounds the probe's cost on long solutions. */
  maxCandidates?: number;
  /** Wall-clock limit for the probe run that tries all candidates at once. */
  probeTimeoutMs?: number;
  /** Per-call limit for one mutant inside the probe; a mutant past it "differs by timeout". */
  callTimeoutMs?: number;
}

export interface TaskMutants {
  taskId: string;
  /** Candidates generated before the cap. */
  generated: number;
  /** Candidates the probe ran. */
  tried: number;
  /** Did not compile. */
  invalid: number;
  /** Compiled, and agreed with the reference on every call the hidden tests make. */
  equivalent: number;
  effective: EffectiveMutant[];
  /** Why none could be made, when `effective` is empty. */
  reason?: string;
}

/** Values first: a mutant that returns a wrong value is the strongest test of the judge, and a timeout is the slowest. */
const DIFFERENCE_RANK: Record<EffectiveMutant["difference"], number> = { value: 0, exception: 1, timeout: 2 };

/**
 * Picks up to `count` effective mutants: best kind of difference first, then spread across
 * operators. Deterministic for the same candidates and verdicts.
 */
export function selectMutants(effective: readonly EffectiveMutant[], count: number): EffectiveMutant[] {
  const ranked = [...effective].sort((a, b) => DIFFERENCE_RANK[a.difference] - DIFFERENCE_RANK[b.difference]);
  const chosen: EffectiveMutant[] = [];
  const usedOperators = new Set<MutationOperator>();
  for (const mutant of ranked) {
    if (chosen.length >= count) break;
    if (usedOperators.has(mutant.operator)) continue;
    chosen.push(mutant);
    usedOperators.add(mutant.operator);
  }
  for (const mutant of ranked) {
    if (chosen.length >= count) break;
    if (!chosen.includes(mutant)) chosen.push(mutant);
  }
  return chosen;
}

/**
 * Generates mutants of the task's reference solution and keeps those that observably change
 * behaviour: on the same calls the hidden tests make, they return a different value, raise, or
 * hang. That is decided by running reference and mutants side by side in the sandbox, without
 * consulting the tests' assertions, so `verifyDataset` can then ask the real judge about them
 * and a mutant it lets through is a genuine false pass.
 */
export async function findEffectiveMutants(
  task: BenchmarkTask,
  sandbox: Sandbox,
  { maxMutants = 3, maxCandidates = 16, probeTimeoutMs = 15_000, callTimeoutMs = 250 }: FindMutantsOptions = {},
): Promise<TaskMutants> {
  const all = generateMutantCandidates(task.canonical_solution);
  const tried = interleaveByOperator(all).slice(0, maxCandidates);
  const base = { taskId: task.task_id, generated: all.length, tried: tried.length };
  if (tried.length === 0) {
    return { ...base, invalid: 0, equivalent: 0, effective: [], reason: "no mutation site in the reference solution" };
  }

  let verdicts = await probe(task, tried, sandbox, probeTimeoutMs, callTimeoutMs);
  if (verdicts === null) {
    // One runaway mutant (memory, an uninterruptible loop) sank the shared probe: try each alone,
    // so the others still count. A lone probe that dies that way is itself a behaviour change.
    verdicts = [];
    for (const candidate of tried) {
      const single = await probe(task, [candidate], sandbox, Math.min(probeTimeoutMs, 5_000), callTimeoutMs);
      verdicts.push(
        single?.[0] ?? { id: candidate.id, valid: true, difference: "timeout", detail: "probe run did not finish" },
      );
    }
  }

  const byId = new Map(verdicts.map((verdict) => [verdict.id, verdict]));
  const effective: EffectiveMutant[] = [];
  let invalid = 0;
  let equivalent = 0;
  for (const candidate of tried) {
    const verdict = byId.get(candidate.id);
    if (verdict === undefined || !verdict.valid) {
      invalid += 1;
    } else if (verdict.difference === null) {
      equivalent += 1;
    } else {
      effective.push({ ...candidate, difference: verdict.difference, detail: verdict.detail });
    }
  }
  const selected = selectMutants(effective, maxMutants);
  return {
    ...base,
    invalid,
    equivalent,
    effective: selected,
    ...(selected.length === 0
      ? { reason: `none of ${tried.length} candidates changed behaviour on the hidden tests` }
      : {}),
  };
}

async function probe(
  task: BenchmarkTask,
  candidates: readonly MutantCandidate[],
  sandbox: Sandbox,
  timeoutMs: number,
  callTimeoutMs: number,
): Promise<ProbeVerdict[] | null> {
  const code = buildProbeProgram(task, candidates, callTimeoutMs / 1000);
  const result = await sandbox.run({ language: "python", code, timeoutMs });
  return parseProbeOutput(result.stdout);
}
