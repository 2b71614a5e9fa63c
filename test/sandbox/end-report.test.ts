import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createSandbox, type ManagedSandbox, type RunRequest, type RunResult } from "../../src/index.js";
import { type EndMarkScanner, endReportScanners } from "../../src/sandbox/run/end-report.js";
import { collectRun, killProcessGroup } from "../../src/sandbox/run/run-child.js";
import { bwrapMissing } from "../helpers/capabilities.js";
import { scratchDir } from "../helpers/scratch.js";

const MARK = "0123456789abcdef0123456789abcdef";
const STDOUT_REPORT = `\x1eselfheal-end ${MARK}\n`;
const STDERR_REPORT = `\x1eselfheal-end ${MARK} 003\n`;

/** Feeds `text` to a scanner in the given pieces; what came out as output, and what the scanner found. */
function scan(scanner: EndMarkScanner, pieces: string[]): { output: string; found: string | null } {
  const output = pieces.map((piece) => scanner.push(Buffer.from(piece, "latin1")).toString("latin1")).join("");
  return { output: output + scanner.flush().toString("latin1"), found: scanner.found };
}

/** What collectRun needs besides the child, for the cases that drive it directly. */
function collectOptions() {
  return {
    language: "python" as const,
    stdin: undefined,
    timeoutMs: 60_000,
    maxOutputBytes: 1_000_000,
    startedAt: performance.now(),
  };
}

describe("the end report's scanner", () => {
  it("takes the report out of the output wherever the chunks split it", () => {
    const text = `line one\nline two\n${STDERR_REPORT}`;
    for (let cut = 0; cut <= text.length; cut++) {
      const { output, found } = scan(endReportScanners(MARK).stderr, [text.slice(0, cut), text.slice(cut)]);
      expect({ cut, output, found }).toEqual({ cut, output: "line one\nline two\n", found: "003" });
    }
    const bytewise = scan(endReportScanners(MARK).stdout, [..."out\n", ...STDOUT_REPORT]);
    expect(bytewise).toEqual({ output: "out\n", found: "" });
  });

  it("leaves output alone that only looks like a report: another nonce, a tail it never writes, a start cut off", () => {
    const otherNonce = `\x1eselfheal-end ${"f".repeat(32)} 000\n`;
    expect(scan(endReportScanners(MARK).stderr, [otherNonce])).toEqual({ output: otherNonce, found: null });
    const badTail = `\x1eselfheal-end ${MARK} ok!\nafter\n`;
    expect(scan(endReportScanners(MARK).stderr, [badTail])).toEqual({ output: badTail, found: null });
    const cutOff = `text\x1eselfheal-end ${MARK.slice(0, 10)}`;
    expect(scan(endReportScanners(MARK).stdout, [cutOff])).toEqual({ output: cutOff, found: null });
  });

  it("passes on what comes after the report (a thread or a child still writing)", () => {
    expect(scan(endReportScanners(MARK).stdout, [`a\n${STDOUT_REPORT}late\n`])).toEqual({
      output: "a\nlate\n",
      found: "",
    });
  });
});

describe("a run that reports its end", () => {
  it("ends on the report, with the status it gives, while the process is still alive", async () => {
    const child = spawn(
      "sh",
      [
        "-c",
        `printf 'out\\n'; printf 'err\\n' >&2; printf '${STDOUT_REPORT.replace("\x1e", "\\036").replace("\n", "\\n")}'; printf '${STDERR_REPORT.replace("\x1e", "\\036").replace("\n", "\\n")}' >&2; exec sleep 600`,
      ],
      { detached: true, stdio: ["pipe", "pipe", "pipe"] },
    );
    const result = await collectRun({ child, killAll: () => killProcessGroup(child), endMark: MARK }, collectOptions());
    // Resolved before Node saw the exit: the report, not the exit, ended it (the kill is on its way).
    expect(child.exitCode).toBeNull();
    expect(child.signalCode).toBeNull();
    expect(result).toMatchObject({ status: "error", exitCode: 3, signal: null, stdout: "out\n", stderr: "err\n" });
    await new Promise((resolve) => child.once("exit", resolve));
    expect(child.signalCode).toBe("SIGKILL");
  });

  it("without a report (no mark given), ends on the exit as before", async () => {
    const child = spawn(
      "sh",
      ["-c", `printf '${STDOUT_REPORT.replace("\x1e", "\\036").replace("\n", "\\n")}'; exit 4`],
      {
        detached: true,
        stdio: ["pipe", "pipe", "pipe"],
      },
    );
    const result = await collectRun({ child, killAll: () => killProcessGroup(child) }, collectOptions());
    expect(result).toMatchObject({ status: "error", exitCode: 4, stdout: STDOUT_REPORT });
  });
});

describe("a program handed to its run after it exited", () => {
  it("is reported with its exit status, not waited on for an exit Node has already told", async () => {
    // A pre-warmed interpreter can die between being taken from the pool and its run's watch.
    // (What it printed is gone: Node drains the pipes nobody reads once their child exits.)
    const child = spawn("sh", ["-c", "exit 5"], { detached: true, stdio: "pipe" });
    await new Promise((resolve) => child.once("exit", resolve));
    const result = await collectRun({ child, killAll: () => killProcessGroup(child) }, collectOptions());
    expect(result).toMatchObject({ status: "error", exitCode: 5, signal: null });
  });
});

const backends = [
  ["process", null],
  ["bwrap", bwrapMissing()],
] as const;

for (const [kind, missing] of backends) {
  describe.skipIf(missing !== null)(`the Python bootstrap's end report, ${kind} backend`, () => {
    const opened: ManagedSandbox[] = [];
    afterAll(() => Promise.all(opened.map((sandbox) => sandbox.close())));
    const open = () => {
      const sandbox = createSandbox({ kind, prewarm: ["python"] });
      opened.push(sandbox);
      return sandbox;
    };

    it("gives the program's own exit status and output, warm and cold, with no trace of the report", async () => {
      const sandbox = open();
      const code = "import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)\nsys.exit(3)\n";
      for (const run of [
        () => sandbox.run({ language: "python", code }),
        () => sandbox.run({ language: "python", code, limits: { memoryMb: 300 } }),
      ]) {
        const result = await run();
        expect(result).toMatchObject({
          status: "error",
          exitCode: 3,
          signal: null,
          stdout: "to stdout\n",
          stderr: "to stderr\n",
        });
      }
      expect(await sandbox.run({ language: "python", code: "print('fine')" })).toMatchObject({
        status: "ok",
        exitCode: 0,
        stdout: "fine\n",
        stderr: "",
      });
    });

    it("reports only from the interpreter the run started, not from a fork of it the program made", async () => {
      const sandbox = open();
      // The fork ends through the bootstrap first (the parent waits for it); the run's end is the parent's.
      const code =
        "import os, sys\nif os.fork() == 0:\n    sys.exit(0)\nos.wait()\nprint('parent done')\nsys.exit(5)\n";
      const result = await sandbox.run({ language: "python", code });
      expect(result).toMatchObject({ status: "error", exitCode: 5, stdout: "parent done\n" });
    });

    it("never writes the report into a file the program put on stdout", async () => {
      const sandbox = open();
      const code = [
        "import os",
        "os.makedirs('out', exist_ok=True)",
        "os.dup2(os.open('out/captured.txt', os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)",
        "print('into the file', flush=True)",
      ].join("\n");
      const into = scratchDir("end-report-artifacts");
      const result = await sandbox.run({
        language: "python",
        code,
        collectArtifacts: { into, maxFiles: 5, maxBytes: 10_000 },
      });
      expect(result).toMatchObject({ status: "ok", stdout: "" });
      expect(result.artifacts?.files.map((file) => file.name)).toEqual(["out/captured.txt"]);
      expect(readFileSync(join(into, "out", "captured.txt"), "utf8")).toBe("into the file\n");
    });

    it("keeps output that only looks like a report, and a report's start the program wrote last", async () => {
      const sandbox = open();
      const lookalike = `\\x1eselfheal-end ${"0".repeat(32)} 000`;
      const code = `import sys\nprint("${lookalike}")\nprint("${lookalike}", file=sys.stderr)\nsys.stdout.write("\\x1eselfheal-e")\nsys.exit(2)\n`;
      const result = await sandbox.run({ language: "python", code });
      expect(result).toMatchObject({ status: "error", exitCode: 2 });
      expect(result.stdout).toBe(`\x1eselfheal-end ${"0".repeat(32)} 000\n\x1eselfheal-e`);
      expect(result.stderr).toBe(`\x1eselfheal-end ${"0".repeat(32)} 000\n`);
    });
  });
}

for (const [kind, missing] of backends) {
  describe.skipIf(missing !== null)(`the Node bootstrap's end report, ${kind} backend`, () => {
    const sandbox = createSandbox({ kind, prewarm: ["javascript"] });
    afterAll(() => sandbox.close());
    /** A pre-warmed run: the bootstrap, which reports, runs only those. */
    const warmRun = async (code: string, extra: Partial<RunRequest> = {}) => {
      await sandbox.prewarm(["javascript"]);
      return sandbox.run({ language: "javascript", code, ...extra });
    };

    it("gives the status the exit has, after every exit listener, with the output whole and no trace of the report", async () => {
      const cases: [string, Partial<RunResult>][] = [
        [
          "console.log('to stdout'); console.error('to stderr'); process.exitCode = 3;",
          { status: "error", exitCode: 3, stdout: "to stdout\n", stderr: "to stderr\n" },
        ],
        [
          "process.on('exit', () => { console.log('bye'); process.exitCode = 7; }); console.log('hi');",
          { status: "error", exitCode: 7, stdout: "hi\nbye\n", stderr: "" },
        ],
        ["setTimeout(() => process.exit(9), 5);", { status: "error", exitCode: 9, stdout: "", stderr: "" }],
        // A listener that exits ends the process before the report: the run ends on the exit.
        ["process.on('exit', () => process.exit(4));", { status: "error", exitCode: 4, stdout: "", stderr: "" }],
        [
          "process.stdout.write('x'.repeat(60_000));",
          { status: "ok", exitCode: 0, stdout: "x".repeat(60_000), stderr: "" },
        ],
        ["console.log('fine')", { status: "ok", exitCode: 0, stdout: "fine\n", stderr: "" }],
      ];
      for (const [code, expected] of cases) {
        expect({ code, ...(await warmRun(code)) }).toMatchObject({ code, ...expected });
      }
      // Node prints an uncaught error after the exit event: those runs end on the exit, text whole.
      for (const code of ["throw new Error('boom')", "Promise.reject(new Error('boom'))"]) {
        const thrown = await warmRun(code);
        expect(thrown).toMatchObject({ status: "error", exitCode: 1, stdout: "" });
        expect(thrown.stderr).toMatch(/Error: boom\n[\s\S]*Node\.js v\d+/);
        expect(thrown.stderr).not.toContain("selfheal-end");
      }
    });

    it("never writes the report into a file the program put on stdout", async () => {
      const code = [
        "const fs = require('node:fs');",
        "fs.mkdirSync('out', { recursive: true });",
        "fs.closeSync(1);",
        "fs.openSync('out/captured.txt', 'w');",
        "fs.writeSync(1, 'into the file\\n');",
      ].join("\n");
      const into = scratchDir("node-end-report-artifacts");
      const result = await warmRun(code, { collectArtifacts: { into, maxFiles: 5, maxBytes: 10_000 } });
      expect(result).toMatchObject({ status: "ok", exitCode: 0, stdout: "" });
      expect(readFileSync(join(into, "out", "captured.txt"), "utf8")).toBe("into the file\n");
    });

    it("keeps output that only looks like a report", async () => {
      const lookalike = `\\x1eselfheal-end ${"0".repeat(32)} 000`;
      const result = await warmRun(`console.log("${lookalike}"); console.error("${lookalike}"); process.exitCode = 2;`);
      expect(result).toMatchObject({ status: "error", exitCode: 2 });
      expect(result.stdout).toBe(`\x1eselfheal-end ${"0".repeat(32)} 000\n`);
      expect(result.stderr).toBe(`\x1eselfheal-end ${"0".repeat(32)} 000\n`);
    });
  });
}

describe("the process backend's warm run", () => {
  const sandbox = createSandbox({ kind: "process", prewarm: ["python"] });
  afterAll(() => sandbox.close());

  it("returns on the report, before Node has reaped the interpreter", async () => {
    await sandbox.prewarm(["python"]);
    const result = await sandbox.run({ language: "python", code: "import os\nprint(os.getpid())" });
    // Node reaps a child only on a later turn of its loop, so the interpreter is still there (a
    // zombie at least) when a run ended on its report returns; after an exit it would be gone.
    expect(existsSync(`/proc/${Number(result.stdout)}`)).toBe(true);
    expect(result).toMatchObject({ status: "ok", exitCode: 0 });
  });

  it("returns on the Node bootstrap's report, before its process has gone", async () => {
    const node = createSandbox({ kind: "process", prewarm: ["javascript"] });
    try {
      await node.prewarm(["javascript"]);
      const result = await node.run({ language: "javascript", code: "console.log(process.pid)" });
      // Without the report the run would end on the process's exit, which Node tells once it has
      // reaped it; after the report the bootstrap waits to be killed.
      expect(existsSync(`/proc/${Number(result.stdout)}`)).toBe(true);
      expect(result).toMatchObject({ status: "ok", exitCode: 0 });
    } finally {
      await node.close();
    }
  });
});
