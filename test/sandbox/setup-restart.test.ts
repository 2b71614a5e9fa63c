import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { afterAll, describe, expect, it } from "vitest";
import { findOnPath } from "../../src/sandbox/host/interpreters.js";
import { createSandbox } from "../../src/sandbox/index.js";
import { bwrapMissing } from "../helpers/capabilities.js";
import { removeScratchDirs, scratchDir } from "../helpers/scratch.js";

// bwrap as found on PATH, put before the real one for this file's process before anything probes
// it. While `fail-next` exists, the next call fails as bwrap's bind of the host's root failed in CI
// when docker changed a mount under it (before any program ran), and removes the file; every call
// is logged.
const wrapperDir = scratchDir("bwrap-wrapper");
const failNext = join(wrapperDir, "fail-next");
const calls = join(wrapperDir, "calls");
const realBwrap = findOnPath("bwrap");
if (realBwrap) {
  // The run's own uid calls it too, after the drop from root, and logs its call.
  chmodSync(wrapperDir, 0o777);
  writeFileSync(calls, "");
  chmodSync(calls, 0o666);
  writeFileSync(
    join(wrapperDir, "bwrap"),
    [
      "#!/bin/sh",
      `echo call >> ${calls}`,
      `if [ -e ${failNext} ]; then`,
      `  rm -f ${failNext}`,
      `  echo 'bwrap: Can'"'"'t bind mount /oldroot/ on /newroot/: Unable to apply mount flags: remount "/newroot/var/lib/docker/overlay2/x/merged": Invalid argument' >&2`,
      "  exit 1",
      "fi",
      `exec ${realBwrap} "$@"`,
      "",
    ].join("\n"),
    { mode: 0o755 },
  );
  process.env.PATH = `${wrapperDir}:${process.env.PATH}`;
}
const callCount = (): number => readFileSync(calls, "utf8").split("\n").length - 1;

const skip = bwrapMissing();
// A skipped file runs no hooks, the one that removes scratch dirs included.
if (skip) removeScratchDirs();

describe.skipIf(skip)("a bwrap run whose sandbox fails in its setup", () => {
  // Each run asks limits of its own, so it is a bwrap of its own: no pool, no parked spare and
  // no fork server serve it.
  const sandbox = createSandbox({ kind: "bwrap", prewarm: false });
  afterAll(() => sandbox.close());
  const run = (code: string) => sandbox.run({ language: "python", code, limits: { memoryMb: 300 } });

  /** How many times one ok run calls bwrap here (two where the interpreter lives under a hidden home). */
  let callsPerRun = 0;

  it("starts once more and runs the program once, where bwrap failed before the program's first line", async () => {
    expect((await run("print('probe')")).status).toBe("ok");
    // The fork server starts (two calls) for runs under the sandbox's own limits; it is up before the counting.
    await sandbox.prewarm([]);
    let before = callCount();
    expect((await run("print('counted')")).status).toBe("ok");
    callsPerRun = callCount() - before;
    expect(callsPerRun).toBeGreaterThan(0);

    before = callCount();
    writeFileSync(failNext, "");
    const result = await run("print('ran')");
    expect([result.status, result.stdout, result.stderr]).toEqual(["ok", "ran\n", ""]);
    expect(existsSync(failNext)).toBe(false);
    expect(callCount() - before).toBe(1 + callsPerRun);
  });

  it("does not start again a program that failed with bwrap's words of its own", async () => {
    const before = callCount();
    // A bwrap run of its own, as in the case above: a forked run has no bwrap to restart.
    const result = await run(
      "import sys\nsys.stderr.write('bwrap: Can\\'t bind mount /oldroot/ on /newroot/\\n')\nsys.exit(1)",
    );
    expect([result.status, result.exitCode, result.stderr]).toEqual([
      "error",
      1,
      "bwrap: Can't bind mount /oldroot/ on /newroot/\n",
    ]);
    expect(callCount() - before).toBe(callsPerRun);
  });
});
