import { execFileSync } from "node:child_process";
import { chmodSync, writeFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { findOnPath } from "../../src/sandbox/host/interpreters.js";
import { bwrapMissing, skipReason } from "../helpers/capabilities.js";
import { scratchDir } from "../helpers/scratch.js";

const noBwrap = skipReason("bwrap", bwrapMissing());

describe.skipIf(noBwrap !== null)(`a sandbox being prepared${noBwrap ? ` (skipped: ${noBwrap})` : ""}`, () => {
  it("lets another run print and finish, and timers fire, while the first sandbox still probes the host", async () => {
    // A bwrap on PATH that holds the host probe (its first call) at a gate until the test opens it:
    // the probe is then provably under way for as long as the test likes, with no clock involved.
    const gate = scratchDir("prepare-gate");
    chmodSync(gate, 0o755);
    execFileSync("mkfifo", ["-m", "0666", join(gate, "started"), join(gate, "release")]);
    const realBwrap = findOnPath("bwrap");
    writeFileSync(
      join(gate, "bwrap"),
      `#!/bin/sh\nif [ ! -e ${gate}/open ]; then echo probing > ${gate}/started; read _ < ${gate}/release; fi\nexec ${realBwrap} "$@"\n`,
      { mode: 0o755 },
    );
    const path = process.env.PATH;
    process.env.PATH = `${gate}:${path}`;
    // A fresh module graph: the host is probed once per process, and this process has probed it already.
    vi.resetModules();
    const fresh = await import("../../src/sandbox/index.js");
    const events: string[] = [];
    const ticker = setInterval(() => {
      if (events.at(-1) !== "tick") events.push("tick");
    }, 1);
    const first = fresh.createSandbox({ kind: "bwrap", prewarm: false });
    const second = fresh.createSandbox({ kind: "process", prewarm: false });
    try {
      const firstRun = first.run({ language: "python", code: "print('first')" }).then((result) => {
        events.push(`first run: ${result.stdout.trim()}`);
        return result;
      });
      await readFile(join(gate, "started"));
      events.push("probe held");
      const secondRun = await second.run(
        { language: "python", code: "print('one')\nprint('two')\n" },
        { onOutput: (_stream, line) => events.push(`second run printed ${line}`) },
      );
      events.push(`second run: ${secondRun.status}`);
      // And the interval fires again, still before the probe goes on.
      while (events.at(-1) !== "tick") await new Promise((resolve) => setImmediate(resolve));
      writeFileSync(join(gate, "open"), "");
      events.push("gate opened");
      await writeFile(join(gate, "release"), "go\n");
      const result = await firstRun;
      expect(result.status).toBe("ok");
      expect(first.kind).toBe("bwrap");
      expect(events.filter((event) => event !== "tick")).toEqual([
        "probe held",
        "second run printed one",
        "second run printed two",
        "second run: ok",
        "gate opened",
        "first run: first",
      ]);
      expect(events.slice(events.indexOf("probe held"), events.indexOf("gate opened"))).toContain("tick");
    } finally {
      clearInterval(ticker);
      process.env.PATH = path;
      await Promise.all([first.close(), second.close()]);
    }
  });
});
