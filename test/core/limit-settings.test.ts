import { afterAll, describe, expect, it } from "vitest";

import { settingsWithFlags } from "../../src/cli/flag-settings.js";
import { InvalidSettingsError } from "../../src/core/errors.js";
import { createAgent, createSandbox, DEFAULT_LIMITS, parseSettings } from "../../src/index.js";
import { bwrapMissing } from "../helpers/capabilities.js";
import { fence, scriptedModel } from "../helpers/helpers.js";

describe("sandbox limits as settings", () => {
  it("takes every limit from JSON, defaults from the sandbox's one list", () => {
    const settings = parseSettings(
      JSON.parse(
        '{"memoryMb": 1024, "cpuSeconds": 30, "maxProcesses": 8, "maxFileMb": 2, "maxDiskMb": 128, "maxOutputBytes": 4096, "maxConnections": 3, "maxNetworkMb": 5}',
      ),
    );
    expect(settings).toMatchObject({
      memoryMb: 1024,
      cpuSeconds: 30,
      maxProcesses: 8,
      maxFileMb: 2,
      maxDiskMb: 128,
      maxOutputBytes: 4096,
      maxConnections: 3,
      maxNetworkMb: 5,
    });
    const defaults = parseSettings({});
    expect({
      timeoutMs: defaults.timeoutMs,
      memoryMb: defaults.memoryMb,
      cpuSeconds: defaults.cpuSeconds,
      maxProcesses: defaults.maxProcesses,
      maxFileMb: defaults.maxFileMb,
      maxDiskMb: defaults.maxDiskMb,
      maxOutputBytes: defaults.maxOutputBytes,
      maxConnections: defaults.maxConnections,
      maxNetworkMb: defaults.maxNetworkMb,
    }).toEqual(DEFAULT_LIMITS);
  });

  it("refuses a limit out of its bounds, or misspelt, naming it", () => {
    expect(() => parseSettings(JSON.parse('{"memoryMb": 8}'))).toThrow(
      new InvalidSettingsError("memoryMb must be at least 32"),
    );
    expect(() => parseSettings({ maxProcesses: 100_000 })).toThrow(
      new InvalidSettingsError("maxProcesses must be at most 4096"),
    );
    expect(() => parseSettings({ cpuSeconds: 1.5 })).toThrow(
      new InvalidSettingsError("cpuSeconds must be a whole number"),
    );
    expect(() => parseSettings(JSON.parse('{"memoryMB": 1024}'))).toThrow(
      new InvalidSettingsError('unknown setting "memoryMB" (did you mean memoryMb?)'),
    );
  });

  it("takes every limit from its CLI flag, and names the flag when its value is out of bounds", () => {
    const flags = {
      memoryMb: 2048,
      cpuSeconds: 20,
      maxProcesses: 16,
      maxFileMb: 4,
      maxDiskMb: 256,
      maxOutputBytes: 8192,
    };
    expect(settingsWithFlags({ memoryMb: 1024 }, flags)).toMatchObject(flags);
    expect(() => settingsWithFlags({}, { memoryMb: 16 })).toThrow(
      new InvalidSettingsError("--memory-mb must be at least 32 (got 16)"),
    );
    expect(() => settingsWithFlags({}, { maxOutputBytes: 10 })).toThrow(
      new InvalidSettingsError("--max-output-bytes must be at least 1024 (got 10)"),
    );
  });
});

const noBwrap = bwrapMissing();
const kinds = noBwrap === null ? (["process", "bwrap"] as const) : (["process"] as const);

/**
 * One sandbox made with the default limits serves every run, so what changes from run to run is
 * only the context: the limits reach the backend in each run's request.
 */
describe.each(kinds)("a run's memory from its context, on the %s sandbox", (kind) => {
  const sandbox = createSandbox({ kind });
  afterAll(() => sandbox.close());
  // Touching the pages of a big allocation takes CPU on a slow host: only memory may decide here.
  const context = (json: string) => ({ maxAttempts: 1, cpuSeconds: 120, timeoutMs: 120_000, ...JSON.parse(json) });
  const allocate = (mb: number) => fence(`data = bytearray(${mb} * 1024 ** 2)\nprint('allocated')`);
  const run = (code: string, json: string) =>
    createAgent({ model: scriptedModel(code), sandbox }).invoke(
      { task: "Allocate memory." },
      { context: context(json) },
    );

  it("succeeds given more memory than the default, where the default fails", { timeout: 300_000 }, async () => {
    const big = allocate(DEFAULT_LIMITS.memoryMb + 256);
    const refused = await run(big, "{}");
    expect(refused.lastRun?.status).toBe("memory_limit");
    expect(refused.status).toBe("failed");
    const granted = await run(big, `{"memoryMb": ${DEFAULT_LIMITS.memoryMb * 2}}`);
    expect(granted.lastRun).toMatchObject({ status: "ok", stdout: "allocated\n" });
    expect(granted.status).toBe("passed");
  });

  it("fails given less memory than the default, where the default succeeds", { timeout: 300_000 }, async () => {
    const small = allocate(128);
    const fits = await run(small, "{}");
    expect(fits.lastRun).toMatchObject({ status: "ok", stdout: "allocated\n" });
    const refused = await run(small, '{"memoryMb": 96}');
    expect(refused.lastRun?.status).toBe("memory_limit");
    expect(refused.status).toBe("failed");
  });
});
