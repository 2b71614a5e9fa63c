import { describe, expect, it } from "vitest";
import { emptyUsage, type HistoryEntry } from "../../src/core/ledger.js";
import { decideAfterCritic, repeatStreak } from "../../src/core/policy.js";
import type { AgentState } from "../../src/core/state.js";
import { routeAfterCritic, routeAfterWrite, routeTowardsExecution } from "../../src/graph/routes.js";

const settings = { maxAttempts: 4, tokenBudget: 1000, repeatLimit: 2 };
const entry = (attempt: number, fingerprint?: string): HistoryEntry => ({
  attempt,
  node: "fixer",
  codeHash: `h${attempt}`,
  outcome: fingerprint ? "KeyError" : "passed",
  fingerprint,
  tokens: 10,
});

function stateWith(overrides: Partial<AgentState>): AgentState {
  return {
    task: "t",
    language: "python",
    tests: undefined,
    code: "",
    draft: undefined,
    attempt: 1,
    lastRun: undefined,
    critique: { passed: false, summary: "failed", diagnosis: "" },
    errors: [],
    history: [entry(1, "a")],
    usage: emptyUsage(),
    best: undefined,
    inputs: {},
    expect: [],
    artifacts: undefined,
    objections: [],
    notes: [],
    rewrittenFor: [],
    decision: undefined,
    candidates: undefined,
    candidateChoice: undefined,
    proposedInputs: undefined,
    status: "running",
    reason: undefined,
    resumeFrom: undefined,
    ...overrides,
  };
}

describe("decideAfterCritic", () => {
  it("finishes as passed when the critic passed the run", () => {
    const decision = decideAfterCritic(
      stateWith({ critique: { passed: true, summary: "ok", diagnosis: "" } }),
      settings,
    );
    expect(decision).toMatchObject({ next: "finish", status: "passed" });
  });

  it("sends a failure with attempts and budget left to the fixer", () => {
    expect(decideAfterCritic(stateWith({}), settings)).toEqual({ next: "fixer" });
  });

  it("stops as failed when the attempts are spent", () => {
    const decision = decideAfterCritic(
      stateWith({ attempt: 4, history: [entry(1, "a"), entry(2, "b"), entry(3, "c"), entry(4, "d")] }),
      settings,
    );
    expect(decision).toMatchObject({ next: "finish", status: "failed" });
  });

  it("stops as budget_exhausted when the tokens are spent", () => {
    const usage = { ...emptyUsage(), totalTokens: 1000 };
    expect(decideAfterCritic(stateWith({ usage }), settings)).toMatchObject({
      next: "finish",
      status: "budget_exhausted",
    });
  });

  it("asks for one fresh rewrite when the same error repeats repeatLimit times", () => {
    const decision = decideAfterCritic(stateWith({ attempt: 2, history: [entry(1, "a"), entry(2, "a")] }), settings);
    expect(decision).toEqual({ next: "generator", fingerprint: "a" });
  });

  it("stops as stuck when the error still repeats after its rewrite, naming the error", () => {
    const errors = [
      { fingerprint: "a", type: "KeyError", message: "'total'", count: 3, firstAttempt: 1, lastAttempt: 3 },
    ];
    const state = stateWith({
      attempt: 3,
      history: [entry(1, "a"), entry(2, "a"), entry(3, "a")],
      rewrittenFor: ["a"],
      errors,
    });
    const decision = decideAfterCritic(state, settings);
    expect(decision).toMatchObject({ next: "finish", status: "stuck" });
    expect(decision.next === "finish" && decision.reason).toContain("KeyError: 'total'");
  });

  it("ends a stuck reason in one full stop when the error's message already ends in one", () => {
    const message = "'pandas' is not available here: no package may be installed.";
    const errors = [
      { fingerprint: "a", type: "PackageNotAvailable", message, count: 3, firstAttempt: 1, lastAttempt: 3 },
    ];
    const state = stateWith({
      attempt: 3,
      history: [entry(1, "a"), entry(2, "a"), entry(3, "a")],
      rewrittenFor: ["a"],
      errors,
    });
    const decision = decideAfterCritic(state, settings);
    expect(decision.next === "finish" && decision.reason).toBe(
      `The same error keeps coming back, even after a fresh rewrite: PackageNotAvailable: ${message} (fingerprint a)`,
    );
    expect(
      decideAfterCritic(stateWith({ ...state, errors: [{ ...errors[0]!, message: "no" }] }), settings),
    ).toMatchObject({
      reason: "The same error keeps coming back, even after a fresh rewrite: PackageNotAvailable: no (fingerprint a).",
    });
  });

  it("keeps fixing when a rewrite produced a different error", () => {
    const state = stateWith({
      attempt: 3,
      history: [entry(1, "a"), entry(2, "a"), entry(3, "b")],
      rewrittenFor: ["a"],
    });
    expect(decideAfterCritic(state, settings)).toEqual({ next: "fixer" });
  });

  it("reads the repeat limit from the settings", () => {
    const state = stateWith({ attempt: 2, history: [entry(1, "a"), entry(2, "a")] });
    expect(decideAfterCritic(state, { ...settings, repeatLimit: 3 })).toEqual({ next: "fixer" });
  });
});

describe("repeatStreak", () => {
  it("counts only the latest run of one fingerprint", () => {
    expect(repeatStreak({ history: [entry(1, "a"), entry(2, "b"), entry(3, "b")] })).toEqual({
      fingerprint: "b",
      count: 2,
    });
    expect(repeatStreak({ history: [] })).toEqual({ count: 0 });
  });
});

describe("routeAfterWrite", () => {
  it("executes a new program and ends a run a node already ended", () => {
    expect(routeAfterWrite({ status: "running" })).toBe("execution");
    expect(routeAfterWrite({ status: "budget_exhausted" })).toBe("finish");
    expect(routeAfterWrite({ status: "model_error" })).toBe("finish");
  });
});

describe("routeAfterCritic", () => {
  it("follows the critic's decision without deciding again", () => {
    expect(routeAfterCritic({ attempt: 1, status: "running", decision: { next: "fixer" } })).toBe("fixer");
    expect(routeAfterCritic({ attempt: 2, status: "running", decision: { next: "generator", fingerprint: "a" } })).toBe(
      "generator",
    );
    expect(
      routeAfterCritic({
        attempt: 3,
        status: "failed",
        decision: { next: "finish", status: "failed", reason: "spent" },
      }),
    ).toBe("finish");
  });

  it("says what is wrong when a replacement critic made no decision", () => {
    expect(() => routeAfterCritic({ attempt: 1, status: "running", decision: undefined })).toThrow(
      /made no decision for attempt 1/,
    );
  });
});

describe("routeTowardsExecution", () => {
  it("skips the approval gate unless approval is on", () => {
    expect(routeTowardsExecution({ attempt: 0, objections: [] })).toBe("executor");
    expect(routeTowardsExecution({ attempt: 0, objections: [] }, { context: { approval: true } })).toBe("approval");
  });

  it("asks no one to approve an attempt an objection already fails", () => {
    const objections = [{ attempt: 1, source: "generator", type: "NoCodeError", message: "no code" }];
    expect(routeTowardsExecution({ attempt: 0, objections }, { context: { approval: true } })).toBe("executor");
  });
});

describe("routeAfterCritic when the critic stopped the run itself", () => {
  it("ends a run the critic stopped, even with an older decision to repair on record", () => {
    const stopped = stateWith({ status: "model_error", resumeFrom: "critic", decision: { next: "fixer" } });
    expect(routeAfterCritic(stopped)).toBe("finish");
  });
});
