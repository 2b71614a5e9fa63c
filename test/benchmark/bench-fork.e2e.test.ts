import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { cleanEnv, REPO } from "../helpers/cli-helpers.js";

describe("npm run bench:fork", () => {
  it("prints a fork's and a namespaced fork's p50 for the interpreter with and without site", () => {
    const result = spawnSync(process.execPath, ["--import", "tsx", "bench/fork.ts", "--forks", "3"], {
      cwd: REPO,
      env: cleanEnv({}),
      encoding: "utf8",
      timeout: 120_000,
    });
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    const rows = result.stdout.split("\n").filter((line) => line.startsWith("-I"));
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      const figures = row.match(/(\d+\.\d\d)\s+(\d+\.\d\d)$/);
      // Figures only: which is larger is the benchmark's to show, not a test's to bound.
      expect(figures, row).not.toBeNull();
      expect(Number(figures?.[1])).toBeGreaterThan(0);
      expect(Number(figures?.[2])).toBeGreaterThan(0);
    }
  }, 150_000);
});
