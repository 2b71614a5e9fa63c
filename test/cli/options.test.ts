import { describe, expect, it } from "vitest";
import { packagesFromFlags, settingsWithFlags } from "../../src/cli/flag-settings.js";
import { describeModel } from "../../src/cli/run-lines.js";
import { InvalidSettingsError } from "../../src/core/errors.js";

describe("settings from flags", () => {
  it("names the flag and the value given when a flag is out of range", () => {
    expect(() => settingsWithFlags({}, { timeout: 5 })).toThrow(
      new InvalidSettingsError("--timeout must be at least 100 (got 5)"),
    );
  });

  it("names the setting key when the bad value was stored, not typed", () => {
    expect(() => settingsWithFlags({ maxAttempts: 0 }, { model: "m" })).toThrow(
      new InvalidSettingsError("maxAttempts must be at least 1"),
    );
  });

  it("lays the flags given over the stored settings", () => {
    expect(settingsWithFlags({ maxAttempts: 7, model: "a" }, { model: "b" })).toMatchObject({
      maxAttempts: 7,
      model: "b",
    });
  });
});

describe("--allow-package", () => {
  it("files a bare name under the run's language and a prefixed one under its prefix", () => {
    expect(packagesFromFlags(["left-pad@1.3.0", "python:pyyaml", "@scope/pkg"], "javascript")).toEqual({
      python: ["pyyaml"],
      javascript: ["left-pad@1.3.0", "@scope/pkg"],
    });
    expect(packagesFromFlags(["javascript:is-odd", "requests==2.31"], "python")).toEqual({
      python: ["requests==2.31"],
      javascript: ["is-odd"],
    });
  });

  it("allows nothing when the flag is absent", () => {
    expect(packagesFromFlags(undefined, "python")).toEqual({ python: [], javascript: [] });
  });

  it("names the flag when a value is not a package", () => {
    expect(() => packagesFromFlags(["--index-url=http://evil"], "python")).toThrow(
      new InvalidSettingsError(
        '--allow-package "--index-url=http://evil": a package must be a name with an optional version, such as left-pad@1.3.0',
      ),
    );
  });
});

describe("the model line", () => {
  const settings = { model: "gpt-4o-mini", fixerModel: null, criticModel: null };

  it("names the model and OpenAI's endpoint when no base URL is set", () => {
    expect(describeModel(settings, { scripted: false }, {})).toBe("model gpt-4o-mini at https://api.openai.com/v1");
  });

  it("names the base URL without the credentials in it, and the other roles' models", () => {
    const env = { OPENAI_BASE_URL: "http://user:secret@localhost:11434/v1/" };
    expect(describeModel({ ...settings, fixerModel: "big" }, { scripted: false }, env)).toBe(
      "model gpt-4o-mini (fixer big) at http://localhost:11434/v1",
    );
  });

  it("says when the model is scripted", () => {
    expect(describeModel({ ...settings, model: "scripted-demo" }, { scripted: true }, {})).toBe(
      "model scripted-demo (scripted, no API key)",
    );
  });
});
