import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createAgent, createSandbox } from "../../src/index.js";
import { fence, promptText, scriptedModel } from "../../test/helpers/helpers.js";
import { scratchDir } from "../../test/helpers/scratch.js";
import { staticCheck } from "./index.js";

const sandbox = createSandbox({ kind: "process" });

describe("example: static check before execution", () => {
  it("rejects a disallowed import before it runs, and the fixer's clean program passes", async () => {
    const marker = join(scratchDir("static"), "ran");
    const model = scriptedModel(
      fence(
        `import subprocess\nopen(${JSON.stringify(marker)}, "w").write("ran")\nprint(subprocess.run(["echo", "hi"]))`,
      ),
      (messages) => {
        expect(promptText(messages)).toMatch(/import of 'subprocess' is not allowed/);
        return fence("import math\nprint(math.sqrt(16))");
      },
    );
    const agent = createAgent({ model, sandbox, verifiers: [staticCheck()] });
    const result = await agent.invoke({ task: "Print the square root of 16." });
    expect(existsSync(marker)).toBe(false);
    expect(result.status).toBe("passed");
    expect(result.attempt).toBe(2);
    expect(result.history[0]).toMatchObject({ outcome: "DisallowedImport" });
    expect(result.errors[0]).toMatchObject({ type: "DisallowedImport", count: 1 });
    expect(result.lastRun?.stdout).toBe("4.0\n");
  });

  it("bans eval and exec, and reports syntax errors without running", async () => {
    const model = scriptedModel(
      fence("x = eval('1 + 1')\nprint(x)"),
      fence("def broken(:\n    pass"),
      fence("print(1 + 1)"),
    );
    const result = await createAgent({ model, sandbox, verifiers: [staticCheck()] }).invoke({ task: "Print 2." });
    expect(result.status).toBe("passed");
    expect(result.errors.map((error) => error.type)).toEqual(["DisallowedCall", "SyntaxError"]);
    expect(result.errors[0]?.message).toMatch(/call to 'eval\(\)' is not allowed/);
  });

  it("appears as a node in the graph Studio draws", async () => {
    const { graph } = await import("./graph.js");
    const drawn = await graph.getGraphAsync();
    expect(Object.keys(drawn.nodes)).toContain("staticCheck");
    expect(drawn.edges).toEqual(
      expect.arrayContaining([expect.objectContaining({ source: "staticCheck", target: "approval" })]),
    );
  });
});
