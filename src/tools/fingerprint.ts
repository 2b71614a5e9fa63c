import { createHash } from "node:crypto";

/**
 * Removes what changes between two runs of the same bug: line numbers, temp paths, memory
 * addresses and object ids. What is left names the bug, not where or when it happened.
 */
export function normalizeErrorMessage(message: string): string {
  return message
    .replace(/(?:\/[\w.@+-]+)+\/(main|tests?)\.(py|js)/g, "$1.$2")
    .replace(/\/(?:tmp|var\/folders|private\/var)\/[\w./@+-]*/g, "<tmp>")
    .replace(/\b0x[0-9a-f]+\b/gi, "0x?")
    .replace(/\bline \d+\b/gi, "line ?")
    .replace(/:\d+:\d+\b/g, ":?:?")
    .replace(/\b(id|pid|object id)[=: ]\s*\d+/gi, "$1=?")
    .replace(/\b\d{6,}\b/g, "<n>")
    .replace(/\s+/g, " ")
    .trim();
}

/** Short stable hash of an error's type and normalised message. */
export function fingerprintError(type: string, message: string): string {
  return createHash("sha256")
    .update(`${type}\n${normalizeErrorMessage(message)}`)
    .digest("hex")
    .slice(0, 12);
}

export function hashCode(code: string): string {
  return createHash("sha256").update(code).digest("hex").slice(0, 12);
}
