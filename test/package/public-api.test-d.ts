import { describe, expectTypeOf, it } from "vitest";
import {
  type AgentOptions,
  type AgentState,
  createAgent,
  type OutputEvent,
  type SettingsInput,
  type Verifier,
} from "../../src/index.js";

const agent = createAgent();

describe("the public API's types", () => {
  it("takes a partial context with no cast and no parseSettings", () => {
    expectTypeOf(agent.invoke).toBeCallableWith(
      { task: "t" },
      { context: { maxAttempts: 3 }, configurable: { thread_id: "x" } },
    );
    expectTypeOf(agent.invoke).toBeCallableWith(
      { task: "t", language: "javascript", tests: "assert(true)" },
      { context: {} },
    );
    expectTypeOf<SettingsInput["maxAttempts"]>().toEqualTypeOf<number | undefined>();
  });

  it("refuses a context value of the wrong type and an unknown language", () => {
    // @ts-expect-error maxAttempts is a number
    void agent.invoke({ task: "t" }, { context: { maxAttempts: "3" } });
    // @ts-expect-error sandbox is one of the known backends
    void agent.invoke({ task: "t" }, { context: { sandbox: "vm" } });
    // @ts-expect-error language is python or javascript
    void agent.invoke({ task: "t", language: "cobol" });
  });

  it("returns the whole state from invoke", async () => {
    const result = await agent.invoke({ task: "t" });
    expectTypeOf(result.status).toEqualTypeOf<AgentState["status"]>();
    expectTypeOf(result.attempt).toEqualTypeOf<number>();
    expectTypeOf(result.usage.totalTokens).toEqualTypeOf<number>();
    expectTypeOf(result.best).toEqualTypeOf<AgentState["best"]>();
    expectTypeOf(result.code).toEqualTypeOf<string>();
  });

  it("types stream chunks by mode", async () => {
    for await (const [mode, chunk] of await agent.stream(
      { task: "t" },
      { streamMode: ["updates", "values", "custom"] },
    )) {
      if (mode === "values") expectTypeOf(chunk.attempt).toEqualTypeOf<number>();
      if (mode === "updates") expectTypeOf(chunk).toHaveProperty("critic");
    }
    for await (const state of await agent.stream({ task: "t" }, { streamMode: "values" })) {
      expectTypeOf(state.status).toEqualTypeOf<AgentState["status"]>();
    }
  });

  it("types createAgent's options", () => {
    expectTypeOf(createAgent).parameter(0).toEqualTypeOf<AgentOptions | undefined>();
    expectTypeOf<AgentOptions["verifiers"]>().toEqualTypeOf<Verifier[] | undefined>();
    const verifier: Verifier = {
      name: "v",
      stage: "after",
      check: (_state, { settings }) => (settings.maxAttempts > 2 ? null : { type: "T", message: "m" }),
    };
    expectTypeOf(verifier.check).parameter(1).toHaveProperty("settings");
    // @ts-expect-error stage is before or after
    createAgent({ verifiers: [{ name: "v", stage: "during", check: () => null }] });
    expectTypeOf<OutputEvent["stream"]>().toEqualTypeOf<"stdout" | "stderr">();
  });
});
