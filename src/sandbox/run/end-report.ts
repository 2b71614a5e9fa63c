import { randomBytes } from "node:crypto";
import type { Language } from "../types.js";

/**
 * The bootstraps' end report. After the program's last line, atexit and the final flush (Python),
 * or its last exit listener (Node), the bootstrap writes a mark on stdout and the mark with the exit
 * status on stderr, then exits. Seen on both pipes, the run is over: the host need not wait out the
 * exits still to come (the interpreter's, then bwrap's init and monitor): 5-7 ms of a warm Python
 * run on a 2-core host, 8-10 ms of a warm Node run.
 *
 * The mark is a nonce the host hands the bootstrap with "g", so output that merely looks like a
 * report is output. A program could still find the nonce in its own memory and write the report
 * itself; that buys nothing it could not get by exiting with that status there and then, which is
 * all the report says. It goes only to the pipes the run started with (never to a file the program
 * put on fd 1), and a run whose report does not come whole ends, as before, on its exit.
 */
export function endMarkFor(
  language: Language,
  bootstrapped: boolean,
): { endMark?: string; takesProgramWithGo?: boolean } {
  // A cold Node run has no bootstrap (usesBootstrap): it ends on its exit.
  if (!bootstrapped) return {};
  const endMark = randomBytes(16).toString("hex");
  // Only the Python bootstrap reads a program after the mark.
  return language === "python" ? { endMark, takesProgramWithGo: true } : { endMark };
}

const PREFIX = "\x1eselfheal-end ";

/**
 * Takes one stream's report out of its bytes as they come. Bytes that could be the start of the
 * report are held back until the next chunk tells (only a chunk ending in the prefix's first bytes:
 * the prefix starts with an ASCII record separator, which ordinary output hardly ever holds).
 */
export class EndMarkScanner {
  private held: Buffer = Buffer.alloc(0);
  private readonly prefix: Buffer;
  /** What followed the mark: "" on stdout, the three-digit exit status on stderr; null until seen. */
  found: string | null = null;

  constructor(
    mark: string,
    /** The report's fixed-length tail after the mark, newline included, and the rule it must meet. */
    private readonly tail: { length: number; pattern: RegExp },
  ) {
    this.prefix = Buffer.from(`${PREFIX}${mark}`);
  }

  /** The program's output in `chunk`, without the report or anything held back for now. */
  push(chunk: Buffer): Buffer {
    const data = this.held.length > 0 ? Buffer.concat([this.held, chunk]) : chunk;
    this.held = Buffer.alloc(0);
    if (this.found !== null) return data;
    const at = data.indexOf(this.prefix);
    if (at !== -1) {
      const end = at + this.prefix.length + this.tail.length;
      if (data.length < end) {
        this.held = data.subarray(at);
        return data.subarray(0, at);
      }
      const tail = data.subarray(at + this.prefix.length, end).toString("latin1");
      if (this.tail.pattern.test(tail)) {
        this.found = tail.trim();
        return Buffer.concat([data.subarray(0, at), data.subarray(end)]);
      }
      // The mark with a tail the bootstrap never writes: output, and the scan goes on past it.
      return Buffer.concat([data.subarray(0, end), this.push(data.subarray(end))]);
    }
    const kept = data.length - this.partialPrefixAtEnd(data);
    this.held = data.subarray(kept);
    return data.subarray(0, kept);
  }

  /** What is still held back: output after all, once the stream has ended without completing a report. */
  flush(): Buffer {
    const held = this.held;
    this.held = Buffer.alloc(0);
    return held;
  }

  /** How many bytes at the end of `data` are the start of the prefix. */
  private partialPrefixAtEnd(data: Buffer): number {
    const longest = Math.min(this.prefix.length - 1, data.length);
    for (let size = longest; size > 0; size--) {
      if (data.subarray(data.length - size).equals(this.prefix.subarray(0, size))) return size;
    }
    return 0;
  }
}

/** The report's two halves: the mark alone on stdout, the mark and the exit status on stderr. */
export function endReportScanners(mark: string): { stdout: EndMarkScanner; stderr: EndMarkScanner } {
  return {
    stdout: new EndMarkScanner(mark, { length: 1, pattern: /^\n$/ }),
    stderr: new EndMarkScanner(mark, { length: 5, pattern: /^ \d{3}\n$/ }),
  };
}
