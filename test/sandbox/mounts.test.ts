import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { mountTmpfs, unmountLazily } from "../../src/sandbox/host/mounts.js";
import { scratchDir } from "../helpers/scratch.js";

/** A stand-in for mount(8) or umount(8) that runs `body` (sh) instead. */
function fakeCommand(body: string): string {
  const path = join(scratchDir("fake-mount"), "command");
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

describe("mount(8) and umount(8) as a run's start waits on them", () => {
  it("gives up on a mount that never returns, at its deadline, and says it killed it", async () => {
    const hanging = fakeCommand("exec sleep 600");
    await expect(mountTmpfs(hanging, "size=1m", scratchDir("point"), 200)).rejects.toMatchObject({
      killed: true,
      signal: "SIGTERM",
    });
  });

  it("passes a failed mount on, with its exit status", async () => {
    const failing = fakeCommand("echo 'mount: only root can do that' >&2; exit 32");
    await expect(mountTmpfs(failing, "size=1m", scratchDir("point"))).rejects.toMatchObject({
      code: 32,
      stderr: expect.stringContaining("only root"),
    });
  });

  it("hands mount the tmpfs, its options and the mount point", async () => {
    const recording = join(scratchDir("argv"), "argv");
    await mountTmpfs(fakeCommand(`printf '%s\\n' "$@" > ${recording}`), "size=1m,mode=0755", "/the/point");
    expect(readFileSync(recording, "utf8").split("\n")).toEqual([
      "-t",
      "tmpfs",
      "-o",
      "size=1m,mode=0755",
      "selfheal-run",
      "/the/point",
      "",
    ]);
  });

  it("never throws for an unmount, whether it fails or not", async () => {
    await expect(unmountLazily(fakeCommand("exit 1"), "/nowhere")).resolves.toBeUndefined();
  });
});
