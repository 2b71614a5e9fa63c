import type { AllowHostInput } from "../core/allowlist.js";
import type { ErrorRecord } from "../core/ledger.js";
import type { EgressReport } from "../core/run-result.js";
import type { Language } from "../sandbox/types.js";

/** The pieces more than one node's prompt uses, so no prompt borrows from a sibling node. */

export const LANGUAGE_NAMES: Record<Language, string> = { python: "Python 3", javascript: "JavaScript (Node.js 20)" };

/** How a prompt says that part of a text is not shown: `[... 12,345 characters cut ...]`. */
export const cutNote = (characters: number) => `[... ${characters.toLocaleString("en-US")} characters cut ...]`;

/** The end of a long text, where tracebacks and failing output put what matters; the model is told how much is missing. */
export const tail = (text: string, max: number) =>
  text.length <= max ? text : `${cutNote(text.length - max)}\n${text.slice(-max)}`;

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

/** How much of a text input a prompt shows: its first lines, never the whole of a big file. */
export const INPUT_PREVIEW_LIMITS = { lines: 5, lineChars: 200 };

/** What a prompt says of one input file; the bytes of a text file only as its first lines. */
export interface InputSummary {
  name: string;
  bytes: number;
  mediaType: string;
  /** Absent for a binary file. */
  text?: string;
}

function previewLines(text: string): string[] {
  // A final newline ends the last line; it does not start another.
  const lines = text.replace(/\r?\n$/, "").split("\n");
  const shown = lines
    .slice(0, INPUT_PREVIEW_LIMITS.lines)
    .map((line) => `    ${clip(line, INPUT_PREVIEW_LIMITS.lineChars)}`);
  return lines.length > INPUT_PREVIEW_LIMITS.lines ? [...shown, `    ... (${lines.length} lines in all)`] : shown;
}

/**
 * The prompt section on a data task's files: each input by name, size and media type, with the
 * first lines of a text file, and where to write what the user gets back. Empty without either.
 */
export function describeDataFiles(inputs: InputSummary[], expected: string[]): string {
  const parts: string[] = [];
  if (inputs.length > 0) {
    const lines = inputs.flatMap((input) => [
      `- ${input.name} (${input.bytes} bytes, ${input.mediaType})${input.text === undefined ? "" : ", first lines:"}`,
      ...(input.text === undefined ? [] : previewLines(input.text)),
    ]);
    parts.push(
      `Input files you may read, read-only in the working directory (open them by these names):\n${lines.join("\n")}`,
    );
  }
  const must = expected.length > 0 ? ` The task must produce: ${expected.join(", ")}.` : "";
  parts.push(`Files the user gets back go under out/ (it exists; create subfolders as needed).${must}`);
  return parts.join("\n\n");
}

/**
 * What the generator is told of the network: the hosts the program may reach and how, or null when
 * it has none (the default, where the system prompt forbids the network).
 */
export function networkSection(language: Language, allowHosts: readonly AllowHostInput[]): string | null {
  if (allowHosts.length === 0) return null;
  const hosts = allowHosts.map((entry) => (typeof entry === "string" ? entry : entry.host)).join(", ");
  const client =
    language === "python"
      ? "urllib.request (or requests where it is installed)"
      : "fetch, or the http and https modules";
  return [
    `Network: the program may reach these hosts over HTTP and HTTPS, and no others: ${hosts}.`,
    `Use ${client} with URLs naming them; the requests go through a proxy already set in the environment (no DNS lookups, sockets or other hosts).`,
  ].join("\n");
}

/** The most connections a fixer prompt lists one by one. */
const NETWORK_LINES = 8;

/**
 * What the failed run did on the network, for the fixer: each refused request with its reason
 * (the refusal may be the failure's cause), then the allowed ones in a line.
 */
export function networkReport(egress: EgressReport | undefined): string | null {
  if (!egress || egress.connections.length === 0) return null;
  const refused = egress.connections.filter((connection) => !connection.allowed);
  const reached = egress.connections.filter((connection) => connection.allowed);
  const lines = refused
    .slice(0, NETWORK_LINES)
    .map(
      (connection) =>
        `- the program tried to reach ${connection.host}:${connection.port}, refused: ${connection.reason ?? "not allowed"}`,
    );
  const more = refused.length - lines.length + egress.unrecordedRefusals;
  if (more > 0) lines.push(`- and ${more} more refused requests`);
  for (const connection of reached.filter((connection) => connection.reason).slice(0, NETWORK_LINES)) {
    lines.push(`- ${connection.host}:${connection.port} was allowed, but: ${connection.reason}`);
  }
  if (reached.length > 0) {
    const hosts = [...new Set(reached.map((connection) => `${connection.host}:${connection.port}`))].join(", ");
    lines.push(`- reached: ${hosts} (${reached.length} request${reached.length === 1 ? "" : "s"})`);
  }
  return `Network (through the proxy that allows only allowHosts):\n${lines.join("\n")}`;
}
