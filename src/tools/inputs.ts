import { readFile, stat } from "node:fs/promises";
import { basename, resolve } from "node:path";

import { type InputSource, mediaTypeOf, pathInsideWorkDir } from "../core/data-files.js";
import type { InputFile } from "../sandbox/types.js";

/** An input file read for a run: its bytes for the sandbox, and whether a prompt may quote its start. */
export interface LoadedInput extends InputFile {
  bytes: number;
  mediaType: string;
  /** True when the bytes are UTF-8 text with no NUL, so a prompt may show its first lines. */
  isText: boolean;
}

export type LoadedInputs = { ok: true; files: LoadedInput[] } | { ok: false; reason: string };

function isText(content: Uint8Array): boolean {
  if (content.includes(0)) return false;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(content);
    return true;
  } catch {
    return false;
  }
}

const overLimit = (name: string, bytes: number, maxBytes: number) =>
  `input ${name}: the inputs come to ${bytes} bytes or more, over the limit of ${maxBytes} (maxInputBytes)`;

/**
 * Reads the inputs of a run, within `maxBytes` for all of them together; a missing file, a name
 * that escapes the work dir or too many bytes is a one-line reason, not an exception. Sizes are
 * checked before anything is read, so a huge file costs a stat, not its bytes.
 */
export async function loadInputs(
  inputs: Record<string, InputSource>,
  maxBytes: number,
  cwd: string = process.cwd(),
): Promise<LoadedInputs> {
  const sized: { name: string; source: InputSource; bytes: number }[] = [];
  let total = 0;
  for (const [name, source] of Object.entries(inputs)) {
    if (pathInsideWorkDir(name) === null)
      return { ok: false, reason: `input ${JSON.stringify(name)} would land outside the work dir` };
    let bytes: number;
    if ("content" in source) bytes = Buffer.byteLength(source.content);
    else {
      const info = await stat(resolve(cwd, source.path)).catch(() => null);
      // The path alone says which input it is, unless the input is named apart from its file.
      const input = basename(source.path) === name ? `input ${source.path}` : `input ${name} (${source.path})`;
      if (info?.isDirectory()) return { ok: false, reason: `${input} is a folder; give a file (one --input per file)` };
      if (!info?.isFile()) return { ok: false, reason: `${input}: no such file` };
      bytes = info.size;
    }
    total += bytes;
    if (total > maxBytes) return { ok: false, reason: overLimit(name, total, maxBytes) };
    sized.push({ name, source, bytes });
  }
  const files: LoadedInput[] = [];
  let read = 0;
  for (const { name, source } of sized) {
    const content =
      "content" in source
        ? new TextEncoder().encode(source.content)
        : await readFile(resolve(cwd, source.path)).catch(() => null);
    if (!content) return { ok: false, reason: `input ${name}: cannot read ${"path" in source ? source.path : name}` };
    // A file that grew since it was measured is held to the same limit.
    read += content.length;
    if (read > maxBytes) return { ok: false, reason: overLimit(name, read, maxBytes) };
    files.push({ name, content, bytes: content.length, mediaType: mediaTypeOf(name), isText: isText(content) });
  }
  return { ok: true, files };
}
