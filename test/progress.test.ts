import { describe, expect, it } from "vitest";
import { ProgressReporter } from "../src/cli/progress.js";

describe("ProgressReporter", () => {
  it("says an attempt an objection stopped was not run, and prints notes", () => {
    const lines: string[] = [];
    const reporter = new ProgressReporter((text) => lines.push(text));
    reporter.update("executor", {
      attempt: 1,
      lastRun: {
        status: "error",
        exitCode: null,
        signal: null,
        stdout: "",
        stderr: "",
        truncated: false,
        durationMs: 0,
        ran: false,
        error: { type: "Rejected", message: "no", line: null, traceback: "" },
        failedInTests: false,
        progress: null,
      },
    });
    reporter.update("testWriter", { notes: [{ source: "testWriter", attempt: 1, message: "wrote 4 tests, kept 3, dropped 1" }] });
    expect(lines).toEqual(["selfheal: attempt 1: not run (Rejected)\n", "selfheal: testWriter: wrote 4 tests, kept 3, dropped 1\n"]);
  });
});
