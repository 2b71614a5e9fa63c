import { describe, expect, it } from "vitest";
import { chooseCandidate, planRound, proposesInputs } from "../../src/core/candidates.js";
import { type CandidateOutcome, type Execution, ExecutionSchema, keepLatestRound } from "../../src/core/state.js";
import { routeAfterJoin, routeFromStart, routeNextRound } from "../../src/graph/routes.js";
import { parseSettings } from "../../src/index.js";

// The schema fills in ran, failedInTests and progress.
const run: Execution = ExecutionSchema.parse({
  status: "ok",
  exitCode: 0,
  signal: null,
  stdout: "",
  stderr: "",
  truncated: false,
  durationMs: 1,
});

function outcome(index: number, behaviour: string, fields: Partial<CandidateOutcome> = {}): CandidateOutcome {
  return {
    round: 1,
    index,
    kind: "fresh",
    code: `# ${index}`,
    hasCode: true,
    run,
    passed: false,
    outcome: "AssertionError",
    score: 50,
    tokens: 100,
    behaviour,
    shows: `shows ${behaviour}`,
    ...fields,
  };
}

describe("chooseCandidate", () => {
  it("keeps the passing candidate with the best score, then the cheapest", () => {
    const choice = chooseCandidate(
      [
        outcome(0, "a", { passed: true, score: 100, tokens: 300 }),
        outcome(1, "a", { passed: true, score: 100, tokens: 120 }),
        outcome(2, "b"),
      ],
      true,
    );
    expect(choice).toMatchObject({ chosen: 1, passed: 2, size: 3 });
    expect(choice.disagreement).toBeUndefined();
  });

  it("keeps the best of the largest group when none passes, even over a better candidate alone", () => {
    const choice = chooseCandidate(
      [outcome(0, "lonely", { score: 90 }), outcome(1, "pair", { score: 30 }), outcome(2, "pair", { score: 40 })],
      true,
    );
    expect(choice.chosen).toBe(2);
    expect(choice.groups).toEqual([
      { members: [1, 2], shows: "shows pair" },
      { members: [0], shows: "shows lonely" },
    ]);
    expect(choice.agreement).toBe("2 of 3 candidates behave the same on the tests' calls");
    expect(choice.disagreement).toBe("2 candidates (#2, #3): shows pair\n1 candidate (#1): shows lonely");
  });

  it("breaks a tie between groups of one size by their best candidate", () => {
    const choice = chooseCandidate([outcome(0, "x", { score: 20 }), outcome(1, "y", { score: 60 })], false);
    expect(choice.chosen).toBe(1);
    expect(choice.agreement).toBe("1 of 2 candidates print the same");
  });

  it("says all agree when they do", () => {
    expect(chooseCandidate([outcome(0, "x"), outcome(1, "x")], false).agreement).toBe(
      "all 2 candidates print the same",
    );
  });
});

describe("planRound", () => {
  const settings = { candidates: 4, tokenBudget: 10_000, strategy: "mixed" as const };

  it("splits what is left of the budget evenly, before any call", () => {
    const specs = planRound({ attempt: 0, usage: { totalTokens: 2000 } }, settings);
    expect(specs.map((spec) => spec.tokenBudget)).toEqual([4000, 4000, 4000, 4000]);
    expect(specs.map((spec) => spec.kind)).toEqual(["fresh", "fresh", "fresh", "fresh"]);
  });

  it("keeps a share for the proposal of inputs when it goes out beside the candidates", () => {
    const specs = planRound({ attempt: 0, usage: { totalTokens: 0 } }, settings, 1);
    expect(specs.map((spec) => spec.tokenBudget)).toEqual([2000, 2000, 2000, 2000]);
  });

  it("puts one repair of the chosen program first in the later rounds of mixed", () => {
    const specs = planRound({ attempt: 2, usage: { totalTokens: 0 } }, settings);
    expect(specs.map((spec) => [spec.round, spec.kind])).toEqual([
      [3, "repair"],
      [3, "fresh"],
      [3, "fresh"],
      [3, "fresh"],
    ]);
  });

  it("writes only fresh candidates with resample", () => {
    const specs = planRound({ attempt: 1, usage: { totalTokens: 0 } }, { ...settings, strategy: "resample" });
    expect(specs.every((spec) => spec.kind === "fresh")).toBe(true);
  });
});

describe("keepLatestRound", () => {
  it("keeps only the latest round, one outcome per candidate", () => {
    const kept = keepLatestRound([outcome(0, "a"), outcome(1, "a")], [outcome(1, "b", { round: 2 })]);
    expect(kept.map((entry) => [entry.round, entry.index])).toEqual([[2, 1]]);
    expect(keepLatestRound(undefined, [outcome(1, "a"), outcome(0, "a")]).map((entry) => entry.index)).toEqual([0, 1]);
  });
});

describe("routing rounds", () => {
  const failed = { decision: { next: "fixer" as const }, attempt: 1, status: "running" as const };

  it("starts with the generator for one candidate, with a fan-out for more", () => {
    expect(routeFromStart()).toBe("generator");
    expect(routeFromStart({ context: { candidates: 3 } })).toBe("candidate");
  });

  it("repairs after a failed round with repair, and writes a new round with resample or mixed", () => {
    expect(routeNextRound(failed, { context: { candidates: 4 } })).toBe("fixer");
    expect(routeNextRound(failed, { context: { candidates: 4, strategy: "resample" } })).toBe("candidate");
    expect(routeNextRound(failed, { context: { candidates: 4, strategy: "mixed" } })).toBe("candidate");
    expect(routeNextRound(failed, { context: { candidates: 1, strategy: "mixed" } })).toBe("fixer");
    expect(routeNextRound(failed, { context: { candidates: 1, strategy: "resample" } })).toBe("candidate");
  });

  it("leaves a fresh rewrite and the end of the run to the policy, whatever the strategy", () => {
    const context = { candidates: 4, strategy: "resample" };
    expect(routeNextRound({ ...failed, decision: { next: "generator", fingerprint: "f" } }, { context })).toBe(
      "generator",
    );
    expect(routeNextRound({ ...failed, status: "failed" }, { context })).toBe("finish");
  });
});

describe("after the join", () => {
  const choice = { round: 1, size: 3, chosen: 0, passed: 0, groups: [], agreement: "" };
  const joined = {
    status: "running" as const,
    candidateChoice: choice,
    proposedInputs: ["f(1)"],
    language: "python" as const,
  };

  it("probes a round that failed on the proposed inputs, and goes to the critic otherwise", () => {
    expect(routeAfterJoin(joined)).toBe("probe");
    expect(routeAfterJoin({ ...joined, proposedInputs: undefined })).toBe("critic");
    expect(routeAfterJoin({ ...joined, candidateChoice: { ...choice, passed: 1 } })).toBe("critic");
    expect(routeAfterJoin({ ...joined, language: "javascript" })).toBe("critic");
    expect(routeAfterJoin({ ...joined, status: "budget_exhausted" })).toBe("finish");
  });

  it("asks for inputs once, in the first round of several Python candidates", () => {
    const settings = { candidates: 3, proposedInputs: 2 };
    const start = { attempt: 0, proposedInputs: undefined, language: "python" as const };
    expect(proposesInputs(start, settings)).toBe(true);
    expect(proposesInputs({ ...start, attempt: 1 }, settings)).toBe(false);
    expect(proposesInputs({ ...start, proposedInputs: [] }, settings)).toBe(false);
    expect(proposesInputs(start, { ...settings, proposedInputs: 0 })).toBe(false);
    expect(proposesInputs(start, { ...settings, candidates: 1 })).toBe(false);
  });
});

describe("candidate settings", () => {
  it("defaults to one candidate, repair and four sandbox slots, and bounds them", () => {
    expect(parseSettings({})).toMatchObject({ candidates: 1, strategy: "repair", sandboxConcurrency: 4 });
    expect(() => parseSettings({ candidates: 17 })).toThrow("candidates must be at most 16");
    expect(() => parseSettings({ candidates: 0 })).toThrow("candidates must be at least 1");
    expect(() => parseSettings({ sandboxConcurrency: 0 })).toThrow("sandboxConcurrency must be at least 1");
    expect(parseSettings({}).proposedInputs).toBe(0);
    expect(() => parseSettings({ proposedInputs: 11 })).toThrow("proposedInputs must be at most 10");
    expect(() => parseSettings({ strategy: "vote" })).toThrow("strategy must be one of: repair, resample, mixed");
  });

  it("refuses approval with more than one candidate", () => {
    expect(() => parseSettings({ approval: true, candidates: 2 })).toThrow(
      "approval works with one program at a time: set candidates to 1 to use it",
    );
  });
});
