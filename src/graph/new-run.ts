import { UsageError } from "../core/errors.js";
import { checkRunInput } from "../core/run-input.js";
import type { Settings } from "../core/settings.js";
import { type RunInput, RunInputSchema } from "../core/state.js";
import { checkSandbox } from "../sandbox/index.js";
import { loadInputs } from "../tools/inputs.js";
import { checkModelConfig } from "../tools/models.js";

/** A new run as a front end starts one: its input with the defaults filled in, and its settings. */
export interface NewRun {
  input: RunInput;
  settings: Settings;
}

/**
 * The checks every front end makes of a new run before any model call or saved row: the input as
 * `invoke` validates it, its files (there, and within `maxInputBytes` together), the model's
 * configuration (unless the front end brings its own model: a scripted one, a replay, an injected
 * one), and the sandbox the settings name. Each failure is an error the front end shows as one
 * line; `inputLabel` names the files as its user gave them (the CLI's `--input`).
 */
export async function checkNewRun(
  input: unknown,
  settings: Settings,
  checks: { model: "own" | "environment"; inputLabel?: string },
): Promise<NewRun> {
  checkRunInput(input);
  const parsed = RunInputSchema.parse(input);
  const inputs = await loadInputs(parsed.inputs ?? {}, settings.maxInputBytes);
  if (!inputs.ok) {
    throw new UsageError(checks.inputLabel ? inputs.reason.replace(/^input /, `${checks.inputLabel} `) : inputs.reason);
  }
  if (checks.model === "environment") checkModelConfig();
  await checkSandbox({ kind: settings.sandbox, languages: [parsed.language] });
  return { input: parsed, settings };
}
