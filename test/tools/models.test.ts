import { createRequire } from "node:module";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { HumanMessage, SystemMessage } from "@langchain/core/messages";
import { ChatOpenAI } from "@langchain/openai";
import { describe, expect, it } from "vitest";
import { createAgent, createChatModel, createSandbox, parseSettings } from "../../src/index.js";
import { MIN_OUTPUT_TOKENS, planModelCall, planPromptCall, promptTokensAtMost } from "../../src/tools/budget.js";
import { callModel } from "../../src/tools/models.js";
import { countMessageTokens } from "../../src/tools/tokens.js";
import { fence, scriptedModel } from "../helpers/helpers.js";
import { startOpenAIStub } from "../helpers/openai-stub.js";

describe("model roles", () => {
  it("routes mechanical errors to the fixer model and logic failures to the strong fixer", async () => {
    const generator = scriptedModel(fence("print(undefined_name)"));
    const fixerModel = scriptedModel(fence("def f():\n    return 1\n\nassert f() == 2, 'f() should be 2'"));
    const strongFixerModel = scriptedModel(fence("def f():\n    return 2\n\nassert f() == 2"));
    const agent = createAgent({
      model: generator,
      fixerModel,
      strongFixerModel,
      sandbox: createSandbox({ kind: "process" }),
    });
    const result = await agent.invoke(
      { task: "Write f() returning 2." },
      { context: parseSettings({ maxAttempts: 3 }) },
    );
    expect(result.status).toBe("passed");
    expect(result.errors.map((error) => error.type)).toEqual(["NameError", "AssertionError"]);
    expect([generator.callCount, fixerModel.callCount, strongFixerModel.callCount]).toEqual([1, 1, 1]);
  });
});

describe("planModelCall", () => {
  it("shrinks the output cap with the remaining budget and refuses a call that cannot fit", () => {
    expect(planModelCall({ promptTokens: 500, usedTokens: 0, tokenBudget: 40_000, maxOutputTokens: 2048 })).toEqual({
      ok: true,
      outputCap: 2048,
    });
    expect(
      planModelCall({ promptTokens: 500, usedTokens: 39_000, tokenBudget: 40_000, maxOutputTokens: 2048 }),
    ).toEqual({ ok: true, outputCap: 500 });
    const refused = planModelCall({
      promptTokens: 500,
      usedTokens: 39_400,
      tokenBudget: 40_000,
      maxOutputTokens: 2048,
    });
    expect(refused.ok).toBe(false);
    expect(MIN_OUTPUT_TOKENS).toBeGreaterThan(100);
  });
});

describe("planPromptCall", () => {
  // Words, code, and text far from English, where a token holds fewer characters.
  const prompt = [
    new SystemMessage("You write Python programs. Reply with one fenced code block."),
    new HumanMessage("def add(a, b):\n    return a - b  # wrong\nÜberprüfe die Summe: 二加三等于五 🙂"),
  ];

  it("bounds the prompt by its bytes, never under the tokenizer's count", async () => {
    const counted = await countMessageTokens(prompt);
    expect(counted).toBeLessThanOrEqual(promptTokensAtMost(prompt));
    expect(counted).toBeGreaterThan(20);
  });

  it("gives the full reply cap when even the bound fits, and the exact count when asked", async () => {
    const plan = await planPromptCall(prompt, { usedTokens: 0, tokenBudget: 40_000, maxOutputTokens: 2048 });
    expect(plan).toMatchObject({ ok: true, outputCap: 2048 });
    expect(await plan.promptTokens()).toBe(await countMessageTokens(prompt));
  });

  it("caps the reply by the exact count near the end of the budget, so used + prompt + cap is the budget", async () => {
    const counted = await countMessageTokens(prompt);
    const tokenBudget = 40_000;
    const usedTokens = tokenBudget - counted - 300;
    const plan = await planPromptCall(prompt, { usedTokens, tokenBudget, maxOutputTokens: 2048 });
    expect(plan).toMatchObject({ ok: true, outputCap: 300 });
    expect(usedTokens + (await plan.promptTokens()) + 300).toBe(tokenBudget);
  });
});

describe("the output cap", () => {
  it("reaches the provider as max_tokens from a ChatOpenAI of another copy of @langchain/openai, for programs and reviews", async () => {
    // src imports the ESM build; the CJS build is a second copy with its own ChatOpenAI class, as
    // a `file:` dependency or a nested node_modules would give.
    const otherCopy = createRequire(import.meta.url)("@langchain/openai") as typeof import("@langchain/openai");
    const stub = await startOpenAIStub((request) =>
      "response_format" in request
        ? { content: JSON.stringify({ passed: true, reasons: ["prints ok"], fixHint: "" }) }
        : { content: fence("print('ok')") },
    );
    try {
      const model = new otherCopy.ChatOpenAI({
        model: "gpt-4o-mini",
        apiKey: "not-needed",
        configuration: { baseURL: stub.url },
      });
      expect(model instanceof ChatOpenAI).toBe(false);
      const agent = createAgent({ model, sandbox: createSandbox({ kind: "process" }) });
      const settings = parseSettings({ llmReview: true, maxOutputTokens: 700 });
      const result = await agent.invoke({ task: "Print ok." }, { context: settings });

      expect(result.status).toBe("passed");
      // The generator's cap is maxOutputTokens; the review's is that, at most 512.
      expect(stub.requests.map((request) => request.max_tokens)).toEqual([700, 512]);
    } finally {
      await stub.close();
    }
  });

  it("keeps what withConfig bound to a ChatOpenAI when it caps it", async () => {
    const stub = await startOpenAIStub(() => ({ content: "fine" }));
    try {
      const bound = createChatModel("gpt-4o-mini", { temperature: 0 }, { OPENAI_BASE_URL: stub.url }).withConfig({
        stop: ["END"],
      });
      await callModel(bound as unknown as BaseChatModel, [new HumanMessage("hi")], "generator", {
        outputCap: 300,
        timeoutMs: 5000,
      });
      expect(stub.requests[0]).toMatchObject({ max_tokens: 300, stop: ["END"] });
    } finally {
      await stub.close();
    }
  });

  it("leaves a chat model without a maxTokens field as it is", async () => {
    const model = scriptedModel(fence("print('ok')"));
    const agent = createAgent({ model, sandbox: createSandbox({ kind: "process" }) });
    const result = await agent.invoke({ task: "Print ok." }, { context: parseSettings({ maxOutputTokens: 300 }) });
    expect(result.status).toBe("passed");
    expect(model.callCount).toBe(1);
  });
});
