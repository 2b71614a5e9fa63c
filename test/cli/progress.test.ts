import { afterAll, describe, expect, it, vi } from "vitest";
import { formatUsage, ProgressReporter, readableReason } from "../../src/cli/progress.js";
import { terminalStyle } from "../../src/cli/terminal.js";
import { emptyUsage } from "../../src/core/ledger.js";
import type { AgentState, Execution } from "../../src/core/state.js";
import {
  type AgentUpdate,
  createAgent,
  createSandbox,
  ScriptedChatModel,
  type TestIsolation,
} from "../../src/internal.js";
import { failedExecution, fence } from "../helpers/helpers.js";

const ANSI = /\x1b\[/;

const run = (fields: Partial<Execution>): Execution => failedExecution({ durationMs: 31.4, ...fields });

/** A reporter writing into an array, as stderr would look when it is not a terminal. */
function plainReporter(style = terminalStyle({ isTTY: false }, {})) {
  const written: string[] = [];
  const reporter = new ProgressReporter({ stream: { write: (text: string) => written.push(text) > 0 }, style });
  return { reporter, text: () => written.join("") };
}

/** The stream of one failed attempt and one that passes, as the graph sends it. */
function twoAttempts(reporter: ProgressReporter) {
  reporter.taskStarted("generator");
  reporter.update("generator", { usage: [{ node: "generator", inputTokens: 300, outputTokens: 101 }] });
  reporter.taskStarted("executor");
  reporter.output({ kind: "output", attempt: 1, stream: "stderr", line: "ZeroDivisionError: division by zero" });
  reporter.update("executor", {
    attempt: 1,
    lastRun: run({ error: { type: "ZeroDivisionError", message: "division by zero", line: 8, traceback: "" } }),
  });
  reporter.taskStarted("critic");
  reporter.update("critic", {
    critique: { passed: false, summary: "ZeroDivisionError: division by zero", diagnosis: "Raised at line 8." },
  });
  reporter.taskStarted("fixer");
  reporter.update("fixer", { usage: [{ node: "fixer", inputTokens: 500, outputTokens: 312 }] });
  reporter.taskStarted("executor");
  reporter.output({ kind: "output", attempt: 2, stream: "stdout", line: "all checks passed" });
  reporter.update("executor", { attempt: 2, lastRun: run({ status: "ok", exitCode: 0, durationMs: 28 }) });
  reporter.taskStarted("critic");
  reporter.update("critic", {
    critique: { passed: true, summary: "The program ran cleanly.", diagnosis: "" },
    status: "passed",
  });
}

const finalState = (fields: Partial<AgentState>): AgentState =>
  ({
    attempt: 2,
    status: "passed",
    usage: { ...emptyUsage(), inputTokens: 800, outputTokens: 413, totalTokens: 1213, calls: 2 },
    ...fields,
  }) as AgentState;

describe("ProgressReporter off a terminal", () => {
  it("ends each attempt in one summary line, with the program's output indented above it", () => {
    const { reporter, text } = plainReporter();
    twoAttempts(reporter);
    reporter.finished(finalState({}));
    expect(text().split("\n")).toEqual([
      "    ! ZeroDivisionError: division by zero",
      "✗ attempt 1  ZeroDivisionError: division by zero  (31 ms, 401 tokens so far)",
      "    │ all checks passed",
      "✓ attempt 2  passed  (28 ms, 1213 tokens so far)",
      "✓ passed after 2 attempts  1213 tokens (800 in, 413 out), 2 model calls",
      "",
    ]);
  });

  it("marks each output line of a round of candidates with the candidate that printed it, and says how they agreed", () => {
    const { reporter, text } = plainReporter();
    reporter.output({ kind: "output", attempt: 1, stream: "stdout", line: "42", candidate: 0 });
    reporter.output({ kind: "output", attempt: 1, stream: "stderr", line: "oops", candidate: 2 });
    reporter.finished(
      finalState({
        attempt: 1,
        candidateChoice: {
          round: 1,
          size: 3,
          chosen: 0,
          passed: 2,
          groups: [],
          agreement: "2 of 3 candidates print the same",
        },
      }),
    );
    expect(text().split("\n").slice(0, 2)).toEqual(["    │ #1 42", "    ! #3 oops"]);
    expect(text()).toContain("candidates: 2 of 3 candidates print the same");
  });

  it("keeps a candidate's traceback in one block while the others print at the same time", () => {
    const { reporter, text } = plainReporter();
    const line = (candidate: number, stream: "stdout" | "stderr", text: string) =>
      reporter.output({ kind: "output", attempt: 1, stream, line: text, candidate });
    line(0, "stderr", "Traceback (most recent call last):");
    line(1, "stdout", "started");
    line(0, "stderr", '  File "main.py", line 2');
    line(1, "stderr", "Traceback (most recent call last):");
    line(0, "stderr", "KeyError: 'bob'");
    line(1, "stderr", "ZeroDivisionError: division by zero");
    reporter.update("candidate", {});
    expect(text().split("\n").slice(0, 6)).toEqual([
      "    │ #2 started",
      "    ! #1 Traceback (most recent call last):",
      '    ! #1   File "main.py", line 2',
      "    ! #1 KeyError: 'bob'",
      "    ! #2 Traceback (most recent call last):",
      "    ! #2 ZeroDivisionError: division by zero",
    ]);
  });

  it("speaks of the candidates' agreement only when their round is the one the run ended in", () => {
    const choice = {
      round: 1,
      size: 3,
      chosen: 0,
      passed: 0,
      groups: [],
      agreement: "3 of 3 candidates print the same",
    };
    const repaired = plainReporter();
    repaired.reporter.finished(finalState({ attempt: 2, candidateChoice: choice }));
    expect(repaired.text()).not.toContain("candidates:");
    const lastRound = plainReporter();
    lastRound.reporter.finished(finalState({ attempt: 1, candidateChoice: choice }));
    expect(lastRound.text()).toContain("candidates: 3 of 3 candidates print the same");
  });

  it("writes no escape codes when stderr is not a terminal, even though stdout may be", () => {
    const { reporter, text } = plainReporter(terminalStyle({ isTTY: false }, { TERM: "xterm-256color" }));
    twoAttempts(reporter);
    reporter.heading("final program (attempt 2, passed)");
    expect(text()).not.toMatch(ANSI);
  });

  it("writes no escape codes with NO_COLOR set, even on a terminal, and does not spin", () => {
    const style = terminalStyle({ isTTY: true, columns: 80 }, { NO_COLOR: "1", TERM: "xterm-256color" });
    expect(style).toEqual({ color: false, live: false });
    const { reporter, text } = plainReporter(style);
    twoAttempts(reporter);
    reporter.finished(finalState({ status: "failed", reason: "Still failing after 4 of 4 attempts." }));
    expect(text()).not.toMatch(ANSI);
  });

  it("colours a pipe with FORCE_COLOR, as picocolors does, but never spins in it", () => {
    const style = terminalStyle({ isTTY: false }, { FORCE_COLOR: "1" });
    expect(style).toEqual({ color: true, live: false });
    const { reporter, text } = plainReporter(style);
    twoAttempts(reporter);
    expect(text()).toContain("\x1b[32m✓\x1b[39m");
  });

  it("spins only on a sized terminal", () => {
    expect(terminalStyle({ isTTY: true, columns: 120 }, { TERM: "xterm" })).toEqual({ color: true, live: true });
    expect(terminalStyle({ isTTY: true, columns: 0 }, { TERM: "xterm" }).live).toBe(false);
    expect(terminalStyle({ isTTY: true, columns: 120 }, { TERM: "dumb" })).toEqual({ color: false, live: false });
  });

  it("says an attempt an objection stopped was not run, and prints notes and objections", () => {
    const { reporter, text } = plainReporter();
    reporter.update("testWriter", {
      notes: [{ source: "testWriter", attempt: 1, message: "wrote 4 tests, kept 3, dropped 1" }],
    });
    reporter.update("lint", { objections: [{ attempt: 1, source: "lint", type: "Forbidden", message: "uses eval" }] });
    reporter.update("executor", {
      attempt: 1,
      lastRun: run({
        ran: false,
        durationMs: 0,
        error: { type: "Rejected", message: "no", line: null, traceback: "" },
      }),
    });
    reporter.update("critic", { critique: { passed: false, summary: "Rejected: no", diagnosis: "" } });
    expect(text().split("\n")).toEqual([
      "  · testWriter: wrote 4 tests, kept 3, dropped 1",
      "  ! lint: Forbidden: uses eval",
      "✗ attempt 1  Rejected: no  (not run, 0 tokens so far)",
      "",
    ]);
  });

  it("says when the LLM review ran and what it concluded", () => {
    const { reporter, text } = plainReporter();
    const review = { node: "critic", inputTokens: 200, outputTokens: 20 };
    const entry = (attempt: number, outcome: string) => ({
      attempt,
      node: "generator",
      codeHash: "h",
      outcome,
      tokens: 1,
    });
    reporter.update("executor", { attempt: 1, lastRun: run({ durationMs: 40 }) });
    reporter.update("critic", {
      critique: { passed: false, summary: "Review: prints nothing; no total", diagnosis: "print it" },
      usage: [review],
      history: [entry(1, "ReviewRejected")],
    });
    reporter.update("executor", { attempt: 2, lastRun: run({ durationMs: 30 }) });
    reporter.update("critic", {
      critique: { passed: true, summary: "ran cleanly", diagnosis: "" },
      usage: [review],
      history: [entry(2, "passed")],
    });
    reporter.update("executor", { attempt: 3, lastRun: run({ durationMs: 30 }) });
    reporter.update("critic", {
      critique: { passed: true, summary: "ran cleanly", diagnosis: "" },
      history: [entry(3, "passed")],
    });
    expect(text().split("\n")).toEqual([
      "✗ attempt 1  rejected by the LLM review: prints nothing; no total  (40 ms, 220 tokens so far)",
      "✓ attempt 2  passed, approved by the LLM review  (30 ms, 440 tokens so far)",
      "✓ attempt 3  passed  (30 ms, 440 tokens so far)",
      "",
    ]);
  });

  it("names the repeating error in a stuck run's last line, not its fingerprint", () => {
    const { reporter, text } = plainReporter();
    reporter.finished(
      finalState({
        attempt: 3,
        status: "stuck",
        reason:
          "The same error keeps coming back, even after a fresh rewrite: KeyError: 'total' (fingerprint 3fa2b9c01d4e).",
      }),
    );
    expect(text()).toBe(
      "✗ stuck after 3 attempts: The same error keeps coming back, even after a fresh rewrite: KeyError: 'total'.  1213 tokens (800 in, 413 out), 2 model calls\n",
    );
    expect(readableReason("x (fingerprint abc123) y")).toBe("x y");
  });

  it("announces a fresh rewrite, and says what is still running every heartbeat while a model thinks", async () => {
    const written: string[] = [];
    // The clock is the test's: heartbeats come when it moves time on, however loaded the machine.
    vi.useFakeTimers();
    try {
      const reporter = new ProgressReporter({
        stream: { write: (text: string) => written.push(text) > 0 },
        style: { color: false, live: false },
        from: { attempt: 2, tokens: 900 },
        heartbeatMs: 20,
      });
      reporter.taskStarted("generator");
      vi.advanceTimersByTime(70);
      reporter.stop();
      const after = written.length;
      vi.advanceTimersByTime(1_000);
      expect(written.length).toBe(after);
    } finally {
      vi.useRealTimers();
    }
    expect(written[0]).toBe("↻ attempt 3: writing a fresh program (the same error kept coming back)\n");
    expect(written[1]).toMatch(/^… attempt 3: writing a program \(0\.\d s\)\n$/);
  });
});

describe("the line a failed check ends its attempt in", () => {
  const sandbox = createSandbox({ kind: "process" });
  afterAll(() => sandbox.close());

  /** A real run of a wrong program against its tests, streamed into a reporter; the attempt's line. */
  async function attemptLine(language: "python" | "javascript", program: string, tests: string) {
    const { reporter, text } = plainReporter();
    const model = new ScriptedChatModel([fence(program, language)]);
    const stream = await createAgent({ model, sandbox }).stream(
      { task: "Write the function.", language, tests },
      { context: { maxAttempts: 1 }, streamMode: "updates" },
    );
    for await (const chunk of stream)
      for (const [node, update] of Object.entries(chunk)) reporter.update(node, update as AgentUpdate);
    return text()
      .split("\n")
      .find((line) => line.startsWith("✗ attempt 1"));
  }

  it("says what a bare Python assert computed and wanted, where its message is empty", async () => {
    const line = await attemptLine(
      "python",
      "def count_vowels(word):\n    return 0",
      'word = "aeiou"\nassert count_vowels(word) == 5\n',
    );
    expect(line).toMatch(
      /^✗ attempt 1 {2}AssertionError: failed check at line \d+: count_vowels\(word\) returned 0, expected 5 \(where word is 'aeiou'\) {2}\(\d+ ms, \d+ tokens so far\)$/,
    );
  });

  it("says what a node:assert check computed and wanted, not the first of its message's lines", async () => {
    const line = await attemptLine(
      "javascript",
      "function countVowels(word) {\n  return 0;\n}",
      'const assert = require("node:assert");\nassert.strictEqual(countVowels("aeiou"), 5);\n',
    );
    expect(line).toMatch(
      /^✗ attempt 1 {2}AssertionError: failed check at line \d+: countVowels\("aeiou"\) returned 0, expected 5 {2}\(\d+ ms, \d+ tokens so far\)$/,
    );
  });
});

describe("the last line of a run with tests", () => {
  const sandbox = createSandbox({ kind: "process" });
  afterAll(() => sandbox.close());

  /** A real run of a scripted program, streamed into a reporter as `streamRun` streams it; its last line and usage. */
  async function lastLine(tests: string | undefined, testIsolation: TestIsolation) {
    const { reporter, text } = plainReporter();
    const model = new ScriptedChatModel([fence("def inc(x):\n    return x + 1")]);
    const stream = await createAgent({ model, sandbox }).stream(
      { task: "Write inc(x) that adds one.", ...(tests ? { tests } : {}) },
      { context: { testIsolation, maxAttempts: 1 }, streamMode: ["updates", "values"] },
    );
    let final: AgentState | undefined;
    for await (const [mode, chunk] of stream) {
      if (mode === "values") final = chunk as AgentState;
      else for (const [node, update] of Object.entries(chunk)) reporter.update(node, update as AgentUpdate);
    }
    reporter.finished(final!);
    return { line: text().trimEnd().split("\n").at(-1), usage: formatUsage(final!.usage) };
  }

  it("says the tests ran in their own process (testIsolation: process)", async () => {
    const { line, usage } = await lastLine("assert inc(1) == 2\n", "process");
    expect(line).toBe(`✓ passed after 1 attempt  ${usage}; tests in their own process`);
  });

  it("says the tests ran in the program's process with testIsolation: shared", async () => {
    const { line, usage } = await lastLine("assert inc(1) == 2\n", "shared");
    expect(line).toBe(`✓ passed after 1 attempt  ${usage}; tests in the program's process (testIsolation: shared)`);
  });

  it("says nothing of tests when the run had none", async () => {
    const { line, usage } = await lastLine(undefined, "shared");
    expect(line).toBe(`✓ passed after 1 attempt  ${usage}`);
  });

  it("names how the tests were judged from an earlier attempt when the last one never ran", () => {
    const { reporter, text } = plainReporter();
    reporter.update("executor", { attempt: 1, lastRun: run({ testIsolation: "process" }) });
    reporter.update("critic", { critique: { passed: false, summary: "AssertionError", diagnosis: "" } });
    reporter.update("executor", { attempt: 2, lastRun: run({ ran: false, durationMs: 0 }) });
    reporter.update("critic", { critique: { passed: false, summary: "Rejected: no", diagnosis: "" } });
    reporter.finished(finalState({ status: "failed", lastRun: run({ ran: false, durationMs: 0 }) }));
    expect(text().trimEnd().split("\n").at(-1)).toBe(
      "✗ failed after 2 attempts  1213 tokens (800 in, 413 out), 2 model calls; tests in their own process",
    );
  });
});
