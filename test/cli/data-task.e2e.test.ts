import { existsSync, readdirSync, readFileSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli-helpers.js";
import { fence } from "../helpers/helpers.js";
import { type OpenAIStub, startOpenAIStub } from "../helpers/openai-stub.js";
import { scratchDir } from "../helpers/scratch.js";

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
/** Debian's python3 first: that is the one with python3-pandas and python3-matplotlib (.ci/run installs them). */
const debianPython = { PATH: `/usr/bin:${process.env.PATH ?? ""}` };

describe("selfheal demo --data", () => {
  it("reads sales.csv with pandas in the bwrap sandbox, is repaired once, and hands back a real PNG", async () => {
    const cwd = scratchDir("cwd");
    const charts = join(cwd, "charts");
    const result = await runCli(["demo", "--data", "--sandbox", "bwrap", "--json", "--artifacts", charts], {
      cwd,
      env: debianPython,
    });
    expect(result.stderr).toContain("KeyError");
    expect(result.code).toBe(0);
    // matplotlib ran (the PNG below): fontconfig found its config and said nothing on stderr.
    expect(result.stderr).not.toContain("Fontconfig");
    const summary = JSON.parse(result.stdout);
    expect(summary).toMatchObject({ status: "passed", attempt: 2 });
    expect(summary.artifacts.files).toEqual([
      { name: "out/chart.png", bytes: expect.any(Number), sha256: expect.any(String), mediaType: "image/png" },
    ]);
    expect(summary.artifacts.folder).toContain(join(cwd, ".selfheal", "artifacts"));
    expect(readFileSync(join(charts, "chart.png")).subarray(0, 8)).toEqual(PNG_SIGNATURE);
    // The result names the passing attempt's folder, and --artifacts copied only its files.
    expect(summary.artifacts.folder).toMatch(/attempt-2-[0-9a-f]{8}$/);
    expect(readdirSync(charts)).toEqual(["chart.png"]);
  }, 120_000);
});

describe("selfheal run --input --expect --artifacts", () => {
  let stub: OpenAIStub;
  beforeAll(async () => {
    stub = await startOpenAIStub(() => ({
      content: fence(
        "rows = open('numbers.csv').read().split()\nopen('out/total.txt', 'w').write(str(sum(map(int, rows))))",
      ),
    }));
  });
  afterAll(() => stub.close());

  it("reads an input file through a real model client and copies the expected artifact out", async () => {
    const cwd = scratchDir("cwd");
    writeFileSync(join(cwd, "numbers.csv"), "1\n2\n39\n");
    const result = await runCli(
      ["run", "Total numbers.csv into out/total.txt.", "--input", "numbers.csv", "--expect", "out/total.txt"].concat([
        "--artifacts",
        "got",
        "--json",
        "--model",
        "stub-model",
      ]),
      { cwd, env: { OPENAI_BASE_URL: stub.url } },
    );
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).artifacts.files).toEqual([
      expect.objectContaining({ name: "out/total.txt", bytes: 2 }),
    ]);
    expect(readFileSync(join(cwd, "got", "total.txt"), "utf8")).toBe("42");
    const prompt = stub.requests[0]?.messages.map((message) => message.content).join("\n") ?? "";
    expect(prompt).toContain("- numbers.csv (7 bytes, text/csv), first lines:");
  });
});

describe("selfheal run with bad input", () => {
  it("exits 2 with one line for a missing input file, before any model call or store", async () => {
    const cwd = scratchDir("cwd");
    const result = await runCli(["run", "Sum it.", "--input", "missing.csv"], { cwd });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`selfheal: --input ${join(cwd, "missing.csv")}: no such file\n`);
    expect(existsSync(join(cwd, ".selfheal"))).toBe(false);
  });

  it("exits 2 for an input over the size limit", async () => {
    const cwd = scratchDir("cwd");
    const big = join(cwd, "big.csv");
    writeFileSync(big, "");
    truncateSync(big, 17 * 1024 * 1024);
    const result = await runCli(["run", "Sum it.", "--input", big], { cwd });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/big\.csv: .*over the limit of 16777216 \(maxInputBytes\)/);
  });

  it("exits 2 for an --expect outside out/", async () => {
    const result = await runCli(["run", "Draw it.", "--expect", "../chart.png"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/must name a file under out\//);
  });
});
