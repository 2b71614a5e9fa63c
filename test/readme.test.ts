import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cleanEnv, REPO } from "./cli-helpers.js";

const readme = readFileSync(join(REPO, "README.md"), "utf8");

/** The first fenced block of `language` after `heading`. */
function blockAfter(heading: string, language: string): string {
  const section = readme.slice(readme.indexOf(heading));
  const block = new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``).exec(section);
  if (!block) throw new Error(`no ${language} block after ${heading}`);
  return block[1]!;
}

describe("the README", () => {
  it("shows what the use-from-code snippet really prints with no API key", () => {
    // The snippet is plain JavaScript; it imports the package, which here is the source.
    const snippet = blockAfter("## Use from code", "ts").replace(`from "selfheal"`, `from "./src/index.ts"`);
    const shown = blockAfter("## Use from code", "text");
    const result = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", snippet], {
      cwd: REPO,
      env: cleanEnv(),
      encoding: "utf8",
    });
    expect(result.status).toBe(0);
    expect(result.stdout).toBe(shown);
  });
});

describe("the README on the benchmark's run reports", () => {
  it("names the folder `selfheal bench --html` really writes them to", async () => {
    const { runReportsBeside } = await import("../src/cli/commands/bench.js");
    const example =
      /`selfheal bench --html (\S+?)` writes each task's run report\s+in `([^`]+)\/` beside it \([^)]*: `([^`]+)`\)/.exec(
        readme,
      );
    expect(example).not.toBeNull();
    const [, html, folder, file] = example!;
    const beside = runReportsBeside(html!);
    expect(beside.dir).toBe(folder);
    expect(beside.path("HumanEval/0")).toBe(file);
  });
});
