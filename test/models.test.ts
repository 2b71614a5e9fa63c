import { describe, expect, it } from "vitest";
import { createAgent, createSandbox, parseSettings } from "../src/index.js";
import { planModelCall, MIN_OUTPUT_TOKENS } from "../src/tools/budget.js";
import { fence, scriptedModel } from "./helpers.js";

describe("model roles", () => {
  it("routes mechanical errors to the fixer model and logic failures to the strong fixer", async () => {
    const generator = scriptedModel(fence("print(undefined_name)"));
    const fixerModel = scriptedModel(fence("def f():\n    return 1\n\nassert f() == 2, 'f() should be 2'"));
    const strongFixerModel = scriptedModel(fence("def f():\n    return 2\n\nassert f() == 2"));
    const agent = createAgent({ model: generator, fixerModel, strongFixerModel, sandbox: createSandbox({ kind: "process" }) });
    const result = await agent.invoke({ task: "Write f() returning 2." }, { context: parseSettings({ maxAttempts: 3 }) });
    expect(result.status).toBe("passed");
    expect(result.errors.map((error) => error.type)).toEqual(["NameError", "AssertionError"]);
    expect([generator.callCount, fixerModel.callCount, strongFixerModel.callCount]).toEqual([1, 1, 1]);
  });
});

describe("planModelCall", () => {
  it("shrinks the output cap with the remaining budget and refuses a call that cannot fit", () => {
    expect(planModelCall({ promptTokens: 500, usedTokens: 0, tokenBudget: 40_000, maxOutputTokens: 2048 })).toEqual({ ok: true, outputCap: 2048 });
    expect(planModelCall({ promptTokens: 500, usedTokens: 39_000, tokenBudget: 40_000, maxOutputTokens: 2048 })).toEqual({ ok: true, outputCap: 500 });
    const refused = planModelCall({ promptTokens: 500, usedTokens: 39_400, tokenBudget: 40_000, maxOutputTokens: 2048 });
    expect(refused.ok).toBe(false);
    expect(MIN_OUTPUT_TOKENS).toBeGreaterThan(100);
  });
});
