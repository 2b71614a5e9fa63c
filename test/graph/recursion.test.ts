import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { graph as studioGraph } from "../../src/graph/studio.js";
import {
  createAgent,
  createSandbox,
  MAX_ATTEMPTS_LIMIT,
  parseSettings,
  recursionLimitFor,
} from "../../src/internal.js";
import { runCli } from "../helpers/cli-helpers.js";
import { fence, scriptedModel } from "../helpers/helpers.js";
import { type OpenAIStub, startOpenAIStub } from "../helpers/openai-stub.js";

/** A word per attempt with no digits in it, so every failure has its own fingerprint and the run never counts as stuck. */
const word = (n: number): string => (n < 26 ? "" : word(Math.floor(n / 26) - 1)) + String.fromCharCode(97 + (n % 26));
const failingProgram = (n: number) => fence(`raise ValueError("case ${word(n)}")`);

const sandbox = createSandbox({ kind: "process" });

describe("long runs end through the routers, never through the recursion limit", () => {
  let stub: OpenAIStub;
  beforeAll(async () => {
    stub = await startOpenAIStub((_request, index) => ({
      content: failingProgram(index),
      usage: { prompt_tokens: 10, completion_tokens: 10 },
    }));
  });
  afterAll(() => stub.close());

  it("gives maxAttempts an upper bound that the recursion limit covers", () => {
    expect(() => parseSettings({ maxAttempts: MAX_ATTEMPTS_LIMIT + 1 })).toThrow(
      `maxAttempts must be at most ${MAX_ATTEMPTS_LIMIT}`,
    );
    expect(recursionLimitFor(2)).toBeGreaterThan(MAX_ATTEMPTS_LIMIT * 6);
    const noop = () => ({});
    const withTwoSteps = createAgent({
      before: [{ name: "a", node: noop }],
      verifiers: [{ name: "v", stage: "after", check: () => null }],
    });
    expect(withTwoSteps.config?.recursionLimit).toBe(recursionLimitFor(2));
  });

  it("ends failed at exactly 12 attempts from createAgent, with two extra steps", async () => {
    const model = scriptedModel(...Array.from({ length: 12 }, (_, n) => failingProgram(n)));
    const seen: string[] = [];
    const agent = createAgent({
      model,
      sandbox,
      before: [
        {
          name: "countBefore",
          node: () => {
            seen.push("before");
            return {};
          },
        },
      ],
      after: [
        {
          name: "countAfter",
          node: () => {
            seen.push("after");
            return {};
          },
        },
      ],
    });
    const result = await agent.invoke({ task: "Raise." }, { context: { maxAttempts: 12 } });
    expect(result.status).toBe("failed");
    expect(result.attempt).toBe(12);
    expect(result.history).toHaveLength(12);
    expect(seen.filter((step) => step === "after")).toHaveLength(12);
  });

  it("ends failed at exactly 50 attempts from createAgent", async () => {
    const model = scriptedModel(...Array.from({ length: 50 }, (_, n) => failingProgram(n)));
    const result = await createAgent({ model, sandbox }).invoke(
      { task: "Raise." },
      { context: { maxAttempts: 50, tokenBudget: 1_000_000 } },
    );
    expect(result.status).toBe("failed");
    expect(result.attempt).toBe(50);
    expect(result.reason).toBe("Still failing after 50 of 50 attempts.");
  });

  for (const attempts of [12, 50]) {
    it(`ends failed at exactly ${attempts} attempts from the exported Studio graph`, async () => {
      const saved = process.env.OPENAI_BASE_URL;
      process.env.OPENAI_BASE_URL = stub.url;
      try {
        const result = await studioGraph.invoke(
          { task: "Raise." },
          { context: { maxAttempts: attempts, tokenBudget: 1_000_000, sandbox: "process" } },
        );
        expect(result.status).toBe("failed");
        expect(result.attempt).toBe(attempts);
      } finally {
        if (saved === undefined) delete process.env.OPENAI_BASE_URL;
        else process.env.OPENAI_BASE_URL = saved;
      }
    });
  }

  it("ends failed at exactly 50 attempts from the CLI", async () => {
    const dir = mkdtempSync(join(tmpdir(), "selfheal-recursion-"));
    try {
      const result = await runCli(
        [
          "run",
          "Raise.",
          "--max-attempts",
          "50",
          "--token-budget",
          "1000000",
          "--sandbox",
          "process",
          "--json",
          "--db",
          join(dir, "runs.db"),
        ],
        { env: { OPENAI_BASE_URL: stub.url } },
      );
      expect(result.code).toBe(1);
      const summary = JSON.parse(result.stdout) as { status: string; attempt: number };
      expect(summary).toMatchObject({ status: "failed", attempt: 50 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
