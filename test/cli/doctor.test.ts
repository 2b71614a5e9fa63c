import { describe, expect, it } from "vitest";

import { runCli } from "../helpers/cli-helpers.js";

describe("selfheal doctor", () => {
  it("says which limits of the chosen sandbox hold for the whole run and by what", async () => {
    const result = await runCli(["doctor", "--sandbox", "process"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^sandbox: process$/m);
    expect(result.stdout).toMatch(/^ {2}memory +per process +RLIMIT_AS/m);
    expect(result.stdout).toMatch(/^ {2}syscalls +none /m);
    // Each Python is asked which data modules import, which takes a few seconds on a busy machine.
  }, 120_000);

  it("prints the same as JSON", async () => {
    const result = await runCli(["doctor", "--sandbox", "process", "--json"]);
    expect(JSON.parse(result.stdout)).toMatchObject({
      kind: "process",
      processes: { scope: "none" },
      pythons: expect.arrayContaining([
        expect.objectContaining({ modules: expect.objectContaining({ pandas: expect.any(Boolean) }) }),
      ]),
      model: { endpoint: expect.stringContaining("gpt-4o-mini at ") },
    });
  }, 120_000);
});
