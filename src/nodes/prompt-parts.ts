import type { ErrorRecord } from "../core/state.js";
import type { Language } from "../sandbox/types.js";

/** The pieces more than one node's prompt uses, so no prompt borrows from a sibling node. */

export const LANGUAGE_NAMES: Record<Language, string> = { python: "Python 3", javascript: "JavaScript (Node.js 20)" };

/** The end of a long text, where tracebacks and failing output put what matters. */
export const tail = (text: string, max: number) => (text.length <= max ? text : `...${text.slice(-max)}`);

/** The start of a long line. */
export const clip = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max - 3)}...`);

/** How many earlier errors a prompt lists, and how long each line may be. */
export const ERROR_LINE_LIMITS = { errorLines: 8, errorLineChars: 160 };

/** One line per distinct error, most recent last: `KeyError: 'x' (seen 2x)`. */
export function summarizeErrors(errors: ErrorRecord[], except?: string): string[] {
  return errors
    .filter((record) => record.fingerprint !== except)
    .sort((a, b) => a.lastAttempt - b.lastAttempt)
    .slice(-ERROR_LINE_LIMITS.errorLines)
    .map((record) =>
      clip(
        `${record.type}: ${record.message.split("\n")[0]} (seen ${record.count}x)`,
        ERROR_LINE_LIMITS.errorLineChars,
      ),
    );
}
