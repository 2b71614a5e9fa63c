import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { InvalidSettingsError, MissingModelConfigError, parseSettings, UsageError } from "../../src/index.js";
import { checkNewRun } from "../../src/internal.js";
import { scratchDir } from "../helpers/scratch.js";

// checkNewRun: what the CLI's `run` and MCP's `solve` check of a new run before any model call.

afterEach(() => vi.unstubAllEnvs());

describe("checkNewRun", () => {
  const settings = parseSettings({ sandbox: "process" });

  it("gives the input with its defaults filled in, and the settings as given", async () => {
    const run = await checkNewRun({ task: "Print one." }, settings, { model: "own" });
    expect(run.input).toMatchObject({ task: "Print one.", language: "python", inputs: {}, expect: [] });
    expect(run.settings).toBe(settings);
  });

  it("refuses a bad input as invoke does, naming the field", async () => {
    await expect(checkNewRun({ task: "" }, settings, { model: "own" })).rejects.toThrow(
      new InvalidSettingsError("task must not be empty"),
    );
    await expect(checkNewRun({ task: "x", maxAttempts: 2 }, settings, { model: "own" })).rejects.toThrow(
      /"maxAttempts" is a setting, not a field of the input/,
    );
  });

  it("refuses a missing input file under the label the user gave it", async () => {
    const missing = join(scratchDir("new-run"), "none.csv");
    const input = { task: "Read it.", inputs: { "none.csv": { path: missing } } };
    await expect(checkNewRun(input, settings, { model: "own", inputLabel: "--input" })).rejects.toThrow(
      new UsageError(`--input ${missing}: no such file`),
    );
    await expect(checkNewRun(input, settings, { model: "own" })).rejects.toThrow(
      new UsageError(`input ${missing}: no such file`),
    );
  });

  it("asks for the model's configuration only where the front end brings no model", async () => {
    vi.stubEnv("OPENAI_API_KEY", "");
    vi.stubEnv("OPENAI_BASE_URL", "");
    await expect(checkNewRun({ task: "x" }, settings, { model: "environment" })).rejects.toBeInstanceOf(
      MissingModelConfigError,
    );
    await expect(checkNewRun({ task: "x" }, settings, { model: "own" })).resolves.toMatchObject({
      input: { task: "x" },
    });
  });
});
