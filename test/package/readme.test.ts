import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { builtFromSource } from "../../bin/built-from-source.js";
import { cleanEnv, REPO } from "../helpers/cli-helpers.js";

const readme = readFileSync(join(REPO, "README.md"), "utf8");

/** The first fenced block of `language` after `heading`. */
function blockAfter(heading: string, language: string): string {
  const section = readme.slice(readme.indexOf(heading));
  const block = new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``).exec(section);
  if (!block) throw new Error(`no ${language} block after ${heading}`);
  return block[1]!;
}

describe("the README", () => {
  beforeAll(() => {
    // What `npm ci` in a fresh clone does (prepare: npm run build); here only when src/ changed since.
    if (!builtFromSource()) execFileSync("npm", ["run", "build"], { cwd: REPO, stdio: "ignore" });
  }, 300_000);

  it("shows what the use-from-code snippet really prints with no API key, run as written from the clone", () => {
    // The snippet is plain JavaScript importing "selfheal": in the clone that is the package itself
    // (Node resolves a package's own name through its exports), compiled to dist/ by npm ci.
    const snippet = blockAfter("## Use from code", "ts");
    expect(snippet).toContain(`from "selfheal"`);
    const shown = blockAfter("## Use from code", "text");
    const result = spawnSync(process.execPath, ["--input-type=module", "-e", snippet], {
      cwd: REPO,
      env: cleanEnv(),
      encoding: "utf8",
    });
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    expect(result.stdout).toBe(shown);
  });
});

describe("docs/benchmark.md on the benchmark's run reports", () => {
  it("names the folder `selfheal bench --html` really writes them to", async () => {
    const { runReportsBeside } = await import("../../src/cli/commands/bench.js");
    // The sentence moved with the benchmark's HTML report out of the README into its docs page.
    const benchmarkDoc = readFileSync(join(REPO, "docs", "benchmark.md"), "utf8");
    const example =
      /`selfheal bench --html (\S+?)` writes each task's run report\s+in `([^`]+)\/` beside it \([^)]*: `([^`]+)`\)/.exec(
        benchmarkDoc,
      );
    expect(example).not.toBeNull();
    const [, html, folder, file] = example!;
    const beside = runReportsBeside(html!);
    expect(beside.dir).toBe(folder);
    expect(beside.path("HumanEval/0")).toBe(file);
  });
});
