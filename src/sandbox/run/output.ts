import type { OutputStream } from "../types.js";

const NEWLINE = 0x0a;

/**
 * Collects one output stream of a run: keeps at most `maxBytes`, remembers whether more arrived,
 * and hands complete lines to a listener as they come. Bytes are kept raw and decoded once at the
 * end, so a multi-byte character split across two chunks is not mangled; invalid UTF-8 becomes U+FFFD.
 */
export class CappedOutput {
  private readonly chunks: Buffer[] = [];
  private keptBytes = 0;
  private pendingLine: Buffer[] = [];
  private pendingLineBytes = 0;
  /** True once the program wrote more than `maxBytes` to this stream. */
  overflowed = false;

  constructor(
    private readonly stream: OutputStream,
    private readonly maxBytes: number,
    private readonly onLine?: (stream: OutputStream, line: string) => void,
  ) {}

  /** Returns false when this chunk pushed the stream past its cap. */
  push(chunk: Buffer): boolean {
    const room = this.maxBytes - this.keptBytes;
    const kept = chunk.length <= room ? chunk : chunk.subarray(0, Math.max(room, 0));
    if (kept.length > 0) {
      this.chunks.push(kept);
      this.keptBytes += kept.length;
      this.emitLines(kept);
    }
    if (kept.length < chunk.length) this.overflowed = true;
    return !this.overflowed;
  }

  /** Flushes a last line that had no newline, then returns everything kept as text. */
  finish(): string {
    if (this.pendingLineBytes > 0) this.flushPendingLine();
    return decodeUtf8(Buffer.concat(this.chunks, this.keptBytes));
  }

  private emitLines(chunk: Buffer): void {
    if (!this.onLine) return;
    let start = 0;
    for (let newline = chunk.indexOf(NEWLINE); newline !== -1; newline = chunk.indexOf(NEWLINE, start)) {
      this.pendingLine.push(chunk.subarray(start, newline));
      this.pendingLineBytes += newline - start;
      this.flushPendingLine();
      start = newline + 1;
    }
    if (start < chunk.length) {
      this.pendingLine.push(chunk.subarray(start));
      this.pendingLineBytes += chunk.length - start;
    }
  }

  private flushPendingLine(): void {
    const line = decodeUtf8(Buffer.concat(this.pendingLine, this.pendingLineBytes));
    this.pendingLine = [];
    this.pendingLineBytes = 0;
    try {
      this.onLine?.(this.stream, line.endsWith("\r") ? line.slice(0, -1) : line);
    } catch {
      // A failing display callback must not break the run it is displaying.
    }
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: false });

/** Decodes UTF-8, replacing invalid bytes with U+FFFD instead of throwing. */
export function decodeUtf8(bytes: Uint8Array): string {
  return utf8.decode(bytes);
}
