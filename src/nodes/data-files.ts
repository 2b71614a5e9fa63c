import type { Settings } from "../core/settings.js";
import type { AgentState } from "../core/state.js";
import { type LoadedInput, loadInputs } from "../tools/inputs.js";
import { describeDataFiles, INPUT_PREVIEW_LIMITS } from "./prompt-parts.js";

/** Bytes of a text input decoded for its preview: enough for the first lines, never the file. */
const PREVIEW_BYTES = INPUT_PREVIEW_LIMITS.lines * INPUT_PREVIEW_LIMITS.lineChars * 4;

/** The prompt section on the run's files, or why the run's inputs cannot be used (the run ends `invalid_input`). */
export type DataFilesSection = { section?: string } | { invalid: string };

export function summarizeInput(input: LoadedInput) {
  const text = input.isText ? new TextDecoder().decode(input.content.subarray(0, PREVIEW_BYTES)) : undefined;
  return { name: input.name, bytes: input.bytes, mediaType: input.mediaType, ...(text === undefined ? {} : { text }) };
}

/**
 * Reads the inputs (checking they exist and fit `maxInputBytes`) and describes them for a prompt.
 * A data task is one with inputs or expected artifacts; any other prompt stays as it was.
 */
export async function dataFilesSection(
  state: Pick<AgentState, "inputs" | "expect">,
  settings: Settings,
): Promise<DataFilesSection> {
  if (Object.keys(state.inputs).length === 0 && state.expect.length === 0) return {};
  const loaded = await loadInputs(state.inputs, settings.maxInputBytes);
  if (!loaded.ok) return { invalid: loaded.reason };
  return { section: describeDataFiles(loaded.files.map(summarizeInput), state.expect) };
}
