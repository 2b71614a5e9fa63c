import { afterAll, afterEach, beforeEach } from "vitest";
import { rethrowCallbackFailures } from "./callback-failures.js";
import { hangReport, timedOut } from "./hang-report.js";
import { removeScratchDirs } from "./scratch.js";

// Runs in every test file (vitest.config.ts setupFiles).
afterAll(removeScratchDirs);
// An assertion inside a scripted model's reply (or any recorded callback) fails its test.
afterEach(rethrowCallbackFailures);
// A test that times out prints what it was waiting on: CI's log is the only trace of a rare hang.
beforeEach(({ onTestFailed }) => {
  onTestFailed(({ task }) => {
    if (timedOut(task.result?.errors)) console.error(`${task.name} timed out\n${hangReport()}`);
  });
});
