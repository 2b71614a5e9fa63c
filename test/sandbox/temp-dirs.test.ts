import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { describe, expect, it } from "vitest";
import { removeDeadProcessDirs, tempDirOwner, tempDirPrefix } from "../../src/sandbox/host/temp-dirs.js";

describe("selfheal's temporary dirs", () => {
  it("name their owner, an attempt's artifacts on their way to the state included", () => {
    for (const kind of ["run", "support", "runs", "artifacts"] as const) {
      const dir = mkdtempSync(tempDirPrefix(kind));
      expect(basename(dir)).toMatch(new RegExp(`^selfheal-${kind}-${process.pid}-`));
      expect(tempDirOwner(basename(dir))).toBe(process.pid);
      spawnSync("rm", ["-rf", dir]);
    }
  });

  it("of a dead process are swept up, a live one's kept", async () => {
    const dead = spawnSync("true").pid;
    const alive = spawn("sleep", ["600"]);
    try {
      const deadDir = join(tmpdir(), `selfheal-artifacts-${dead}-left`);
      const liveDir = join(tmpdir(), `selfheal-artifacts-${alive.pid}-kept`);
      mkdirSync(join(deadDir, "out"), { recursive: true });
      mkdirSync(liveDir);
      await removeDeadProcessDirs();
      expect([existsSync(deadDir), existsSync(liveDir)]).toEqual([false, true]);
      spawnSync("rm", ["-rf", liveDir]);
    } finally {
      alive.kill("SIGKILL");
    }
  });
});
