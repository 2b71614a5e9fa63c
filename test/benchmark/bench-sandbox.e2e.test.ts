import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { cleanEnv, REPO } from "../helpers/cli-helpers.js";
import { containerEngineMissing } from "../helpers/container-engine.js";

// `npm run bench:sandbox` on a machine whose docker answers but lacks the image: the container
// rows are skipped with the reason, and the other rows are measured.
const engineMissing = containerEngineMissing();

describe.skipIf(engineMissing !== null)("npm run bench:sandbox", () => {
  it("skips the container rows with a reason when the image is not on this machine, and measures the rest", () => {
    const result = spawnSync(
      process.execPath,
      ["--import", "tsx", "bench/sandbox.ts", "--runs", "2", "--throughput-runs", "2"],
      {
        cwd: REPO,
        env: cleanEnv({ SELFHEAL_CONTAINER_IMAGE: "selfheal-no-such-image:never" }),
        encoding: "utf8",
        timeout: 240_000,
      },
    );
    expect(result.stderr).not.toContain("Error");
    expect(result.status).toBe(0);
    expect(result.stdout).toContain(
      "container skipped: the image selfheal-no-such-image:never is not on this machine; pull it, or build one with scripts/build-container-image.sh and name it in SELFHEAL_CONTAINER_IMAGE",
    );
    expect(result.stdout).toMatch(/process backend, cold/);
    expect(result.stdout).not.toMatch(/container \(docker\)/);
  }, 300_000);
});
