import type { FailedCheck, RuntimeValues, ValuePart } from "./runtime-values.js";

/** Python's comparison node names as written. */
const PYTHON_OPS: Record<string, string> = {
  Eq: "==",
  NotEq: "!=",
  Lt: "<",
  LtE: "<=",
  Gt: ">",
  GtE: ">=",
  Is: "is",
  IsNot: "is not",
  In: "in",
  NotIn: "not in",
};

/** Comparisons a failed `assert` meant as "equal", and the ones an `if (...) throw` means as "differ". */
const EQUALITY = new Set(["==", "===", "equal", "strictEqual", "deepEqual", "deepStrictEqual"]);
const INEQUALITY = new Set(["!=", "!=="]);

const isLiteral = (part: ValuePart) => part.value !== undefined && part.expr === part.value;

function describePart(part: ValuePart): string {
  if (part.value === undefined) return `${part.expr} was not evaluated`;
  if (isLiteral(part)) return part.value;
  return part.role === "call" ? `${part.expr} returned ${part.value}` : `${part.expr} is ${part.value}`;
}

/** `add(2, 3) returned -1, expected 5`: the side that was computed, then what the check wanted. */
function expectation(computed: ValuePart, wanted: ValuePart): string {
  return `${describePart(computed)}, expected ${wanted.value ?? wanted.expr}`;
}

/** `failed check at line 12: count_vowels(word) returned 0, expected 5`: the one line a failed check comes to. */
export function describeCheck(check: FailedCheck): string {
  const operands = check.parts.filter((part) => !part.role.startsWith("argument"));
  const where = check.parts
    .filter((part) => part.role.startsWith("argument") && part.value !== undefined && !isLiteral(part))
    .map((part) => `${part.expr} is ${part.value}`);
  const op = check.ops?.length === 1 ? (PYTHON_OPS[check.ops[0]!] ?? check.ops[0]!) : undefined;
  const [left, right] = operands;
  let text: string;
  const wantsEqual =
    check.kind !== "if-throw" ? op !== undefined && EQUALITY.has(op) : op !== undefined && INEQUALITY.has(op);
  if (operands.length === 2 && left && right && wantsEqual) {
    // The side that holds a literal (or the `expected` argument) is what was wanted.
    text = isLiteral(left) && !isLiteral(right) ? expectation(right, left) : expectation(left, right);
  } else if (operands.length === 2 && left && right && op) {
    const outcome = check.kind === "if-throw" ? "was true, so it threw" : "was false";
    text = `\`${left.expr} ${op} ${right.expr}\` ${outcome}: ${describePart(left)}; ${describePart(right)}`;
  } else {
    text = operands.map(describePart).join("; ");
  }
  return `failed check at line ${check.line}: ${text}${where.length > 0 ? ` (where ${where.join(", ")})` : ""}`;
}

/**
 * The values as prompt and report lines: the failed check, the innermost frames with their
 * locals, and the calls the failing test line made. The same text the fixer reads.
 */
export function describeRuntimeValues(values: RuntimeValues): string[] {
  const lines: string[] = [];
  if (values.assertion) lines.push(describeCheck(values.assertion));
  for (const frame of values.frames ?? []) {
    const locals = frame.locals.map(([name, value]) => `${name} = ${value}`).join(", ");
    lines.push(`in ${frame.function}, line ${frame.line}: ${locals || "no locals"}`);
  }
  for (const call of values.calls ?? []) {
    const outcome = call.returned === undefined ? "raised" : `returned ${call.returned}`;
    lines.push(`test line ${call.line} called ${call.function}(${call.args}), which ${outcome}`);
  }
  if (values.cut) lines.push(`[... ${values.cut.toLocaleString("en-US")} characters of these values cut ...]`);
  return lines;
}
