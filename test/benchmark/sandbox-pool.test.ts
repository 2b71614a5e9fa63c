import { describe, expect, it } from "vitest";
import { SandboxPool } from "../../src/benchmark/sandbox-pool.js";
import type { RunResult, Sandbox } from "../../src/index.js";

/** A member that records which runs it served and finishes each when told to. */
function member(name: string, served: string[], finishers: Array<() => void>): Sandbox {
  return {
    kind: "fake",
    describe: () => {
      throw new Error("not used");
    },
    close: async () => undefined,
    run: (request) =>
      new Promise<RunResult>((resolve) => {
        served.push(`${request.code}@${name}`);
        finishers.push(() =>
          resolve({
            status: "ok",
            exitCode: 0,
            signal: null,
            stdout: name,
            stderr: "",
            truncated: false,
            durationMs: 1,
          }),
        );
      }),
  };
}

describe("sandbox pool", () => {
  it("gives each run the member idle longest, and holds a run while every member is busy", async () => {
    const served: string[] = [];
    const finishers: Array<() => void> = [];
    const pool = new SandboxPool([member("a", served, finishers), member("b", served, finishers)]);
    const run = (code: string) => pool.run({ language: "python", code });
    const first = run("1");
    const second = run("2");
    const third = run("3");
    await Promise.resolve();
    expect(served).toEqual(["1@a", "2@b"]);
    finishers[0]!();
    expect((await first).stdout).toBe("a");
    // a went back behind b, which is busy: the waiting run gets a.
    expect(served).toEqual(["1@a", "2@b", "3@a"]);
    finishers[1]!();
    finishers[2]!();
    expect((await second).stdout).toBe("b");
    expect((await third).stdout).toBe("a");
    // Both idle now; b has waited longer since its last run ended before a's.
    const fourth = run("4");
    expect(served.at(-1)).toBe("4@b");
    finishers[3]!();
    await fourth;
  });
});
