import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { createAgent, createSandbox, parseSettings, ScriptedChatModel, SettingsSchema } from "../../src/index.js";
import { cleanEnv, REPO } from "../helpers/cli-helpers.js";
import { fence, scriptedModel } from "../helpers/helpers.js";

describe("settings", () => {
  it("has the documented defaults", () => {
    const settings = parseSettings({});
    expect(settings).toMatchObject({
      maxAttempts: 4,
      tokenBudget: 40_000,
      repeatLimit: 2,
      timeoutMs: 10_000,
      temperature: 0.2,
      llmReview: false,
    });
    expect(settings.model).toBe(process.env.SELFHEAL_MODEL ?? "gpt-4o-mini");
  });

  it("names the field in every invalid-value message", () => {
    expect(() => parseSettings({ maxAttempts: 0 })).toThrow(/maxAttempts must be at least 1/);
    expect(() => parseSettings({ tokenBudget: -1 })).toThrow(/tokenBudget must be at least 1/);
    expect(() => parseSettings({ sandbox: "vm" })).toThrow(/sandbox/);
    expect(SettingsSchema.safeParse({ temperature: 3 }).success).toBe(false);
  });
});

describe("parseSettings of one context", () => {
  it("parses it once and hands every node the same frozen settings", () => {
    const context = { maxAttempts: 7 };
    const first = parseSettings(context);
    expect(parseSettings(context)).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(() => {
      (first as { maxAttempts: number }).maxAttempts = 1;
    }).toThrow(TypeError);
    const other = parseSettings({ maxAttempts: 7 });
    expect(other).not.toBe(first);
    expect(other).toEqual(first);
    // A bad context fails every time it is read, not once.
    const bad = { maxAttempts: 0 };
    expect(() => parseSettings(bad)).toThrow(/maxAttempts/);
    expect(() => parseSettings(bad)).toThrow(/maxAttempts/);
  });
});

describe("the API validates before any model call", () => {
  const sandbox = createSandbox({ kind: "process" });
  const cases: Array<[string, Record<string, unknown>, Record<string, unknown>, RegExp]> = [
    ["maxAttempts below 1", { task: "x" }, { maxAttempts: 0 }, /maxAttempts/],
    ["a negative budget", { task: "x" }, { tokenBudget: -10 }, /tokenBudget/],
    ["an empty task", { task: "   " }, {}, /task/],
    ["an unknown language", { task: "x", language: "cobol" }, {}, /language/],
  ];
  for (const [name, input, context, message] of cases) {
    it(`rejects ${name}`, async () => {
      const model = scriptedModel(fence("print(1)"));
      const agent = createAgent({ model, sandbox });
      // Bad values on purpose: the runtime check is what is under test.
      await expect(
        agent.invoke(input as { task: string }, { context: context as ReturnType<typeof parseSettings> }),
      ).rejects.toThrow(message);
      expect(model.callCount).toBe(0);
    });
  }
});

describe("importing the Studio graph", () => {
  it("needs no API key: the graph langgraph.json serves loads with an empty environment", () => {
    const env = cleanEnv();
    const result = spawnSync(
      process.execPath,
      [
        "--import",
        "tsx",
        "-e",
        "import('./src/graph/studio.ts').then((m) => console.log(Object.keys(m.graph.nodes).sort().join(',')))",
      ],
      { cwd: REPO, env: { PATH: env.PATH ?? "" }, encoding: "utf8" },
    );
    expect(result.stderr).toBe("");
    expect(result.stdout.trim()).toBe(
      "__start__,approval,candidate,critic,executor,finish,fixer,generator,join,probe,propose",
    );
  });
});

describe("an unknown setting", () => {
  it("is an error that names it and the setting it resembles", () => {
    expect(() => parseSettings({ maxAtempts: 3 })).toThrow('unknown setting "maxAtempts" (did you mean maxAttempts?)');
    expect(() => parseSettings({ packageInstall: { timeotMs: 5 } })).toThrow(
      'unknown setting "packageInstall.timeotMs" (did you mean timeoutMs?)',
    );
    expect(() => parseSettings({ colour: "red" })).toThrow(/^unknown setting "colour"$/);
  });

  it("fails a run given as JSON before any model call, instead of running with the default", async () => {
    const context = JSON.parse('{ "maxAtempts": 1 }');
    const model = new ScriptedChatModel([fence("print(1)")]);
    const agent = createAgent({ model, sandbox: createSandbox({ kind: "process" }) });
    await expect(agent.invoke({ task: "Print 1." }, { context })).rejects.toThrow(/unknown setting "maxAtempts"/);
    expect(model.prompts).toEqual([]);
  });
});
