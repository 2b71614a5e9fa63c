import { describe, expect, it } from "vitest";
import { addUsage, emptyUsage, mergeErrors } from "../src/core/ledger.js";

describe("mergeErrors", () => {
  it("bumps the count of a repeated fingerprint instead of adding a row", () => {
    const once = mergeErrors([], [{ fingerprint: "f1", type: "KeyError", message: "'x'", attempt: 1 }]);
    const twice = mergeErrors(once, [{ fingerprint: "f1", type: "KeyError", message: "'x'", attempt: 3 }]);
    expect(twice).toEqual([
      { fingerprint: "f1", type: "KeyError", message: "'x'", count: 2, firstAttempt: 1, lastAttempt: 3 },
    ]);
    const other = mergeErrors(twice, [{ fingerprint: "f2", type: "TypeError", message: "bad", attempt: 4 }]);
    expect(other).toHaveLength(2);
    expect(once[0]?.count).toBe(1);
  });
});

describe("addUsage", () => {
  it("sums calls in total and per node", () => {
    const usage = addUsage(emptyUsage(), [
      { node: "generator", inputTokens: 100, outputTokens: 50 },
      { node: "fixer", inputTokens: 10, outputTokens: 5 },
      { node: "fixer", inputTokens: 1, outputTokens: 1 },
    ]);
    expect(usage).toMatchObject({ inputTokens: 111, outputTokens: 56, totalTokens: 167, calls: 3 });
    expect(usage.byNode.fixer).toEqual({ inputTokens: 11, outputTokens: 6, totalTokens: 17, calls: 2 });
    expect(usage.byNode.generator?.totalTokens).toBe(150);
  });
});
