import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { probeBwrap } from "../../src/sandbox/index.js";
import { cleanEnv, REPO } from "../helpers/cli-helpers.js";
import { containerEngineMissing } from "../helpers/container-engine.js";

// `npm run bench:sandbox` on a machine whose docker answers but lacks the image: the container
// rows are skipped with the reason, and the other rows are measured; the egress rows (issue 40) are
// measured where bwrap is usable, and skipped with the reason where it is not.
const engineMissing = containerEngineMissing();
const bwrap = probeBwrap();
/** A table row: its name, then p50, p90 and the two throughput figures. */
const row = (name: string): RegExp =>
  new RegExp(`^${name.replace(/[()]/g, "\\$&")}.*\\s+[\\d.]+\\s+[\\d.]+\\s+[\\d.]+\\s+[\\d.]+$`, "m");

describe.skipIf(engineMissing !== null)("npm run bench:sandbox", () => {
  it("skips the container rows with a reason when the image is not on this machine, and measures the rest", () => {
    const result = spawnSync(
      process.execPath,
      // Few of each: the rows and their shape are under test here, not the figures.
      [
        ...["--import", "tsx", "bench/sandbox.ts"],
        ...["--runs", "2", "--throughput-runs", "2", "--calls", "100", "--call-runs", "1"],
      ],
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
    if (bwrap.usable) {
      for (const name of [
        "host, urllib imported, no request (",
        "host, one GET, no proxy (",
        "bwrap, cold, urllib imported, no allowHosts",
        "bwrap, cold, allowHosts, no request",
        "bwrap, cold, allowHosts, one GET via the proxy",
      ]) {
        expect(result.stdout).toMatch(row(name));
      }
      // Issue 41: back to back with and without the fork server, four runs at once, and the goals.
      for (const name of [
        "bwrap, back to back",
        "bwrap, back to back, no fork server",
        "bwrap, four at once, each forked on demand",
        "bwrap, four at once, each cold",
      ]) {
        expect(result.stdout).toMatch(new RegExp(`^${name.replace(/[()]/g, "\\$&")}\\s+[\\d.]+\\s+[\\d.]+$`, "m"));
      }
      expect(result.stdout).toMatch(
        /^goal \(issue 41\): bwrap back to back p50 <= 0\.3 x bare spawn p50: [\d.]+ \/ [\d.]+ = [\d.]+: (met|NOT met)$/m,
      );
      expect(result.stdout).toMatch(
        /^egress: one GET via the proxy in bwrap p50 = [\d.]+ ms, [\d.]+ x the same GET from the host \([\d.]+ ms\); .* the proxy's setup -?[\d.]+ ms, the request through it -?[\d.]+ ms \(on the host, the request -?[\d.]+ ms\)$/m,
      );
    } else {
      expect(result.stdout).toContain(
        `egress rows skipped: they run in bwrap, which is not usable here (${bwrap.reason})`,
      );
      expect(result.stdout).not.toMatch(/allowHosts/);
    }
  }, 300_000);
});
