import { InvalidSettingsError } from "./errors.js";
import { formatIssues, SettingsSchema } from "./settings.js";
import { didYouMean } from "./spelling.js";
import { RunInputSchema } from "./state.js";

const INPUT_FIELDS = Object.keys(RunInputSchema.shape);

/**
 * A run's input as `invoke`, Studio and MCP give it, checked as the CLI checks it, before the graph
 * sees it: a bad field is one readable line (InvalidSettingsError, INVALID_SETTINGS), not zod's
 * issues as JSON, and a field the input does not have is refused rather than dropped, with the
 * field it was probably meant to be, or where a setting goes.
 */
export function checkRunInput(input: unknown): void {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    throw new InvalidSettingsError('the input must be an object such as { task: "..." }');
  }
  const unknown = Object.keys(input).filter((key) => !INPUT_FIELDS.includes(key));
  if (unknown.length > 0) throw new InvalidSettingsError(unknown.map(unknownField).join("; "));
  const result = RunInputSchema.safeParse(input);
  if (!result.success) throw new InvalidSettingsError(formatIssues(result.error));
}

function unknownField(key: string): string {
  if (key in SettingsSchema.shape) {
    return `"${key}" is a setting, not a field of the input: give it with the settings (invoke's context, MCP's settings, a Studio assistant's context)`;
  }
  return `unknown input field "${key}"${didYouMean(key, INPUT_FIELDS)} (the input has ${INPUT_FIELDS.join(", ")})`;
}
