import { describe, expect, it } from "vitest";
import {
  type EffectiveMutant,
  generateMutantCandidates,
  interleaveByOperator,
  selectMutants,
} from "../../src/benchmark/mutants.js";
import { tokenizePython } from "../../src/benchmark/python-tokens.js";

const solutions = (source: string) => generateMutantCandidates(source).map((candidate) => candidate.solution);

describe("python tokenizer", () => {
  it("keeps operators inside strings and comments out of the code tokens", () => {
    const tokens = tokenizePython('    x = \'<\' if a < b else """a > b"""  # c >= d\n');
    const operators = tokens.filter((token) => token.kind === "op").map((token) => token.text);
    expect(operators).toEqual(["=", "<"]);
    expect(tokens.filter((token) => token.kind === "string")).toHaveLength(2);
    expect(tokens.at(-2)?.kind).toBe("comment");
  });

  it("tracks bracket depth so a slice colon is not a statement colon", () => {
    const tokens = tokenizePython("if x[1:2]:\n    pass\n");
    const colons = tokens.filter((token) => token.text === ":").map((token) => token.depth);
    expect(colons).toEqual([1, 0]);
  });
});

describe("mutant candidates", () => {
  it("swaps a comparison at its boundary", () => {
    expect(solutions("    return a < b\n")).toContain("    return a <= b\n");
  });

  it("never mutates text inside a string literal or comment", () => {
    const mutated = solutions("    return s == '<'  # x > y\n");
    expect(mutated).toContain("    return s != '<'  # x > y\n");
    expect(mutated.every((text) => text.includes("# x > y"))).toBe(true);
    expect(mutated.some((text) => text.includes("'<='"))).toBe(false);
  });

  it("negates a statement condition and a comprehension filter", () => {
    expect(solutions("    if x > 0:\n        return 1\n    return 0\n")).toContain(
      "    if not (x > 0):\n        return 1\n    return 0\n",
    );
    expect(solutions("    return [x for x in xs if isinstance(x, int)]\n")).toContain(
      "    return [x for x in xs if not (isinstance(x, int))]\n",
    );
  });

  it("treats the in of a for loop as iteration, not membership", () => {
    const mutated = solutions("    return [x for x in xs if s in x]\n");
    expect(mutated).toContain("    return [x for x in xs if s not in x]\n");
    expect(mutated.some((text) => text.includes("for x not in"))).toBe(false);
  });

  it("leaves a unary minus alone but swaps a binary one", () => {
    const mutated = solutions("    return -a - b\n");
    expect(mutated).toContain("    return -a + b\n");
    expect(mutated.some((text) => text.startsWith("    return +a"))).toBe(false);
  });

  it("moves range bounds by one", () => {
    const mutated = solutions("    for i in range(1, n):\n        pass\n");
    expect(mutated).toContain("    for i in range(1, n + 1):\n        pass\n");
    expect(mutated).toContain("    for i in range(1 + 1, n):\n        pass\n");
  });

  it("gives each candidate a stable id and a readable description", () => {
    const [first] = generateMutantCandidates("    return a < b\n");
    expect(first).toMatchObject({ id: "comparison@1:1", operator: "comparison", description: 'line 1: "<" -> "<="' });
  });

  it("returns no candidates for source it cannot tokenize", () => {
    expect(generateMutantCandidates("    return 'unterminated\n")).toEqual([]);
  });

  it("interleaves operators so a capped selection is diverse", () => {
    const candidates = generateMutantCandidates("    return (a < b) and (c < d) and (e + 1 > f)\n");
    const firstFour = interleaveByOperator(candidates)
      .slice(0, 4)
      .map((candidate) => candidate.operator);
    expect(new Set(firstFour).size).toBe(4);
  });

  it("prefers wrong values over hangs, and different operators, when selecting", () => {
    const mutant = (
      id: string,
      operator: EffectiveMutant["operator"],
      difference: EffectiveMutant["difference"],
    ): EffectiveMutant => ({
      id,
      operator,
      difference,
      line: 1,
      description: id,
      detail: "",
      solution: "",
    });
    const chosen = selectMutants(
      [
        mutant("a", "comparison", "timeout"),
        mutant("b", "comparison", "value"),
        mutant("c", "comparison", "value"),
        mutant("d", "constant", "exception"),
      ],
      2,
    );
    expect(chosen.map((picked) => picked.id)).toEqual(["b", "d"]);
  });
});
