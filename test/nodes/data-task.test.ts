import { readdirSync, readFileSync, truncateSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { HumanMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import { DATA_DEMO_TASK, scriptedDemoModelFor } from "../../src/cli/data-demo-model.js";
import {
  artifactFoldersToRemove,
  createAgent,
  createSandbox,
  type Execution,
  type HistoryEntry,
  keepHigherScore,
  loadInputs,
  RunInputSchema,
  State,
} from "../../src/internal.js";
import { artifactObjections } from "../../src/nodes/artifact-check.js";
import { threadFolderName } from "../../src/nodes/executor.js";
import { buildFixerPrompt } from "../../src/nodes/fixer.prompt.js";
import { buildGeneratorPrompt } from "../../src/nodes/generator.prompt.js";
import { describeDataFiles } from "../../src/nodes/prompt-parts.js";
import { fence, promptText, ranWithArtifacts, scriptedModel } from "../helpers/helpers.js";
import { scratchDir } from "../helpers/scratch.js";

const sandbox = createSandbox({ kind: "process" });

/** A model that fails the test if any node asks it for anything. */
const modelNeverCalled = () =>
  scriptedModel(() => {
    throw new Error("the model was called");
  });

const ran = (files: { name: string }[], problems: string[] = [], folder: string | null = null): Execution =>
  ranWithArtifacts(
    files.map(({ name }) => ({ name, bytes: 1, sha256: "x", mediaType: "image/png" })),
    problems,
    folder,
  );

describe("the run input of a data task", () => {
  it("refuses input names and expected artifacts that escape the work dir", () => {
    for (const name of ["../x", "/etc/passwd", "a/../../x"]) {
      const result = RunInputSchema.safeParse({ task: "t", inputs: { [name]: { content: "x" } } });
      expect(result.success, name).toBe(false);
    }
    for (const name of ["../out/x.png", "/out/x.png", "chart.png", "out/../x.png"]) {
      expect(RunInputSchema.safeParse({ task: "t", expect: [name] }).success, name).toBe(false);
    }
    expect(RunInputSchema.parse({ task: "t", expect: ["out/chart.png"] }).expect).toEqual(["out/chart.png"]);
  });

  it("is in the schema Studio reads, with the kept artifacts in the state", () => {
    const fields = (schema: object) => Object.keys("properties" in schema ? (schema.properties as object) : {});
    expect(fields(State.getInputJsonSchema())).toEqual(expect.arrayContaining(["inputs", "expect"]));
    expect(fields(State.getJsonSchema())).toContain("artifacts");
  });
});

describe("loading inputs", () => {
  it("says which input file is missing", async () => {
    const loaded = await loadInputs({ "sales.csv": { path: "/nonexistent/sales.csv" } }, 1000);
    expect(loaded).toEqual({ ok: false, reason: "input /nonexistent/sales.csv: no such file" });
    // An input named apart from its file names both.
    expect(await loadInputs({ "sales.csv": { path: "/nonexistent/2024.csv" } }, 1000)).toEqual({
      ok: false,
      reason: "input sales.csv (/nonexistent/2024.csv): no such file",
    });
  });

  it("refuses inputs over the size limit without reading them", async () => {
    const big = join(scratchDir("inputs"), "big.bin");
    writeFileSync(big, "");
    truncateSync(big, 2000);
    const loaded = await loadInputs({ "big.bin": { path: big } }, 1000);
    expect(loaded.ok).toBe(false);
    expect(!loaded.ok && loaded.reason).toMatch(/big\.bin: .* over the limit of 1000 \(maxInputBytes\)/);
  });

  it("tells text from binary", async () => {
    const loaded = await loadInputs({ "a.csv": { content: "a,b\n" }, "b.bin": { content: "\u0000\u0001" } }, 1000);
    expect(loaded.ok && loaded.files.map((file) => [file.name, file.isText, file.mediaType])).toEqual([
      ["a.csv", true, "text/csv"],
      ["b.bin", false, "application/octet-stream"],
    ]);
  });
});

describe("the prompts of a data task", () => {
  const csv = ["region,revenue", ...Array.from({ length: 50 }, (_, index) => `r${index},${index}`)].join("\n");
  const section = describeDataFiles(
    [
      { name: "sales.csv", bytes: csv.length, mediaType: "text/csv", text: csv },
      { name: "logo.png", bytes: 2048, mediaType: "image/png" },
    ],
    ["out/chart.png"],
  );

  it("name each input with its size and the first lines of a text file, never the whole file", () => {
    expect(section).toContain(`- sales.csv (${csv.length} bytes, text/csv), first lines:`);
    expect(section).toContain("    region,revenue\n    r0,0");
    expect(section).toContain("(51 lines in all)");
    expect(section).not.toContain("r49,49");
    expect(section).toContain("- logo.png (2048 bytes, image/png)\n");
    expect(section).toContain("The task must produce: out/chart.png.");
  });

  it("count the lines of a file that ends in a newline as a person does", () => {
    const sixLines = "a,b\n1,2\n3,4\n5,6\n7,8\n9,10\n";
    const shown = describeDataFiles(
      [{ name: "six.csv", bytes: sixLines.length, mediaType: "text/csv", text: sixLines }],
      [],
    );
    expect(shown).toContain("    ... (6 lines in all)");
    const five = "a\nb\nc\nd\ne\n";
    expect(describeDataFiles([{ name: "five.txt", bytes: 10, mediaType: "text/plain", text: five }], [])).not.toContain(
      "lines in all",
    );
  });

  it("reach both the generator and the fixer", () => {
    const generator = promptText(buildGeneratorPrompt({ task: "t", language: "python", dataFiles: section }));
    const fixer = promptText(
      buildFixerPrompt({ task: "t", language: "python", code: "x", run: ran([]), errors: [], dataFiles: section }),
    );
    for (const prompt of [generator, fixer]) expect(prompt).toContain("- sales.csv (");
  });
});

describe("the critic's artifact findings", () => {
  it("fail a clean run that did not write an expected artifact", () => {
    expect(artifactObjections(["out/chart.png", "out/t.csv"], ran([{ name: "out/t.csv" }]), 2)).toEqual([
      {
        attempt: 2,
        source: "critic",
        type: "MissingArtifact",
        message: "the program did not write out/chart.png, which the task expects; write it under out/",
      },
    ]);
  });

  it("turn each collection problem (a limit, a symlink) into a finding", () => {
    expect(artifactObjections([], ran([], ["too many artifacts: 40 files"]), 1)).toEqual([
      expect.objectContaining({ type: "ArtifactLimit", message: "too many artifacts: 40 files" }),
    ]);
  });
});

describe("the run's end, keeping artifacts", () => {
  const entry = (attempt: number, score: number, artifactsFolder?: string): HistoryEntry => ({
    attempt,
    node: "fixer",
    codeHash: "h",
    outcome: score === 100 ? "passed" : "AssertionError",
    tokens: 1,
    score,
    ...(artifactsFolder ? { artifactsFolder } : {}),
  });

  it("removes only the folders of attempts that were never the kept one", () => {
    const thread = "/a/t_1";
    const [one, two, three, four] = [1, 2, 3, 4].map((n) => `${thread}/attempt-${n}-00`);
    // Scores 40, 20, 60, 100: attempt 2 was never kept; 1 and 3 were, for a while, and stay.
    const history = [entry(1, 40, one), entry(2, 20, two), entry(3, 60, three), entry(4, 100, four)];
    const kept = { attempt: 4, folder: four!, files: [], score: 100 };
    expect(artifactFoldersToRemove(history, kept)).toEqual([two]);
  });

  it("keeps a later attempt that tied the best, as the artifacts reducer does", () => {
    const history = [entry(1, 30, "/a/t/attempt-1-00"), entry(2, 30, "/a/t/attempt-2-00")];
    expect(keepHigherScore({ score: 30, n: 1 }, { score: 30, n: 2 })).toEqual({ score: 30, n: 2 });
    expect(artifactFoldersToRemove(history, { attempt: 2, folder: "/a/t/attempt-2-00", files: [], score: 30 })).toEqual(
      [],
    );
  });

  it("never removes the folders a fork's history names in its parent's thread", () => {
    const history = [entry(1, 50, "/a/parent/attempt-1-00"), entry(2, 20, "/a/parent/attempt-2-00")];
    const kept = { attempt: 3, folder: "/a/fork/attempt-3-00", files: [], score: 100 };
    expect(artifactFoldersToRemove([...history, entry(3, 100, kept.folder)], kept)).toEqual([]);
  });

  it("time travel back to a superseded attempt finds its folder, and a fork keeps its own", async () => {
    const artifactsDir = scratchDir("artifacts");
    const checkpointer = new MemorySaver();
    const write = (text: string, fail: boolean) =>
      fence(`open('out/a.txt', 'w').write('${text}')\n${fail ? "assert False, 'not yet'" : "print('done')"}`);
    const model = scriptedModel(write("one", true), write("two", false), write("fork", false));
    const agent = createAgent({ model, sandbox, checkpointer });
    const config = { context: { artifactsDir }, configurable: { thread_id: "tt" } };
    const result = await agent.invoke({ task: "Write out/a.txt." }, config);
    expect(result.status).toBe("passed");
    const history = [];
    for await (const snapshot of agent.getStateHistory(config)) history.push(snapshot);
    // After attempt 1's critic the kept artifacts were attempt 1's: that folder must still be there.
    const afterFirst = history.find((snapshot) => snapshot.next.includes("fixer"));
    const firstKept = afterFirst?.values.artifacts?.folder as string;
    expect(firstKept).toMatch(/attempt-1-[0-9a-f]{8}$/);
    expect(readFileSync(join(firstKept, "out/a.txt"), "utf8")).toBe("one");
    // Running attempt 2 again from there writes a folder of its own, not the first branch's.
    const forked = await agent.invoke(null, { ...afterFirst!.config, context: { artifactsDir } });
    expect(forked.status).toBe("passed");
    expect(forked.artifacts?.folder).not.toBe(result.artifacts?.folder);
    expect(readFileSync(join(result.artifacts!.folder!, "out/a.txt"), "utf8")).toBe("two");
    expect(readFileSync(join(forked.artifacts!.folder!, "out/a.txt"), "utf8")).toBe("fork");
  });
});

describe("a data task through the agent", () => {
  it("ends as invalid_input before any model call when an input file is missing", async () => {
    const result = await createAgent({ model: modelNeverCalled(), sandbox }).invoke({
      task: "Sum the numbers in data.csv.",
      inputs: { "data.csv": { path: "/nonexistent/data.csv" } },
    });
    expect(result).toMatchObject({ status: "invalid_input", attempt: 0, reason: expect.stringContaining("data.csv") });
  });

  it("ends as invalid_input before any model call when the inputs are over maxInputBytes", async () => {
    const result = await createAgent({ model: modelNeverCalled(), sandbox }).invoke(
      { task: "Count the bytes.", inputs: { "a.txt": { content: "x".repeat(100) } } },
      { context: { maxInputBytes: 10 } },
    );
    expect(result.status).toBe("invalid_input");
    expect(result.reason).toMatch(/over the limit of 10/);
  });

  it("fails an attempt that missed its expected artifact, tells the fixer, and keeps only the passing attempt's files", async () => {
    const artifactsDir = scratchDir("artifacts");
    const model = scriptedModel(
      (messages) => {
        expect(promptText(messages)).toContain("- data.csv (4 bytes, text/csv), first lines:\n    1\n    2");
        return fence("import os\nopen('out/wrong.txt', 'w').write('x')\nprint(sum(int(l) for l in open('data.csv')))");
      },
      (messages) => {
        expect(promptText(messages)).toContain("MissingArtifact: the program did not write out/total.txt");
        return fence("total = sum(int(l) for l in open('data.csv'))\nopen('out/total.txt', 'w').write(str(total))");
      },
    );
    const result = await createAgent({ model, sandbox }).invoke(
      {
        task: "Sum data.csv into out/total.txt.",
        inputs: { "data.csv": { content: "1\n2\n" } },
        expect: ["out/total.txt"],
      },
      { context: { artifactsDir }, configurable: { thread_id: "t/1" } },
    );
    expect(result.status).toBe("passed");
    expect(result.attempt).toBe(2);
    expect(result.objections).toEqual([expect.objectContaining({ attempt: 1, type: "MissingArtifact" })]);
    const folder = result.artifacts?.folder as string;
    expect(folder).toMatch(new RegExp(`^${join(artifactsDir, "t_1", "attempt-2-")}[0-9a-f]{8}$`));
    expect(result.artifacts).toEqual({
      attempt: 2,
      folder,
      score: 100,
      files: [
        { name: "out/total.txt", bytes: 1, sha256: expect.stringMatching(/^[0-9a-f]{64}$/), mediaType: "text/plain" },
      ],
    });
    expect(readFileSync(join(folder, "out/total.txt"), "utf8")).toBe("3");
    // Attempt 1 was the kept attempt until attempt 2 passed, and its checkpoints name its folder,
    // so it stays for time travel; the run's own result points at the passing attempt only.
    const [first] = readdirSync(join(artifactsDir, "t_1")).filter((name) => name !== basename(folder));
    expect(first).toMatch(/^attempt-1-[0-9a-f]{8}$/);
    expect(readdirSync(join(artifactsDir, "t_1", first!, "out"))).toEqual(["wrong.txt"]);
  });

  it("lists artifacts but keeps no bytes without an artifactsDir", async () => {
    const model = scriptedModel(fence("open('out/a.txt', 'w').write('hi')"));
    const result = await createAgent({ model, sandbox }).invoke({ task: "Write out/a.txt." });
    expect(result.artifacts).toMatchObject({ folder: null, files: [{ name: "out/a.txt", bytes: 2 }] });
  });

  it("fails an attempt whose artifact is over the limit, and the run goes on to the fixer", async () => {
    const model = scriptedModel(
      fence("open('out/big.bin', 'wb').write(b'x' * 500)"),
      fence("open('out/s.txt', 'w').write('s')"),
    );
    const result = await createAgent({ model, sandbox }).invoke(
      { task: "Write a file." },
      { context: { maxArtifactBytes: 100 } },
    );
    expect(result.status).toBe("passed");
    expect(result.history.map((entry) => entry.outcome)).toEqual(["ArtifactLimit", "passed"]);
  });
});

describe("the folder of a thread's artifacts", () => {
  it("never lets a thread id climb out of artifactsDir", () => {
    expect(["..", ".", "../../etc", "a/b", "t 1"].map(threadFolderName)).toEqual([
      "_.",
      "_",
      "_._.._etc",
      "a_b",
      "t_1",
    ]);
  });
});

describe("the data demo's scripted model", () => {
  it("comes back on resume for the data task, and the plain demo's for any other", async () => {
    const ask = async (task: string) =>
      String((await scriptedDemoModelFor(task).invoke([new HumanMessage("go")])).content);
    expect(await ask(DATA_DEMO_TASK)).toContain("import pandas as pd");
    expect(await ask("anything else")).toContain("calculate_statistics");
  });
});
