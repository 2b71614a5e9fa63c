import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { expect, it } from "vitest";

import { REPO } from "./cli-helpers.js";
import { scratchDir } from "./scratch.js";

interface JsonReport {
  testResults: { assertionResults: { title: string; status: string; failureMessages: string[] }[] }[];
}

it("fails a test whose scripted model's reply fails an assertion, with that assertion's message", () => {
  const report = join(scratchDir("callback-failures"), "report.json");
  const run = spawnSync(
    process.execPath,
    [
      join(REPO, "node_modules/vitest/vitest.mjs"),
      "run",
      "--config",
      "test/fixtures/vitest.config.ts",
      "--reporter=json",
      `--outputFile=${report}`,
      "test/fixtures/callback-assertion.fixture.ts",
    ],
    { cwd: REPO, encoding: "utf8", timeout: 120_000 },
  );
  expect(run.status).toBe(1);
  const results = (JSON.parse(readFileSync(report, "utf8")) as JsonReport).testResults.flatMap(
    (file) => file.assertionResults,
  );
  expect(results.map(({ title, status }) => [title, status])).toEqual([
    ["fails on an assertion inside the fixer's reply, though the run itself ends as expected", "failed"],
    ["passes when the assertion inside the reply holds", "passed"],
  ]);
  expect(results[0]?.failureMessages.join("\n")).toContain("callback-assertion-marker");
});
