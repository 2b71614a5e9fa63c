import { afterAll, afterEach } from "vitest";
import { rethrowCallbackFailures } from "./callback-failures.js";
import { removeScratchDirs } from "./scratch.js";

// Runs in every test file (vitest.config.ts setupFiles).
afterAll(removeScratchDirs);
// An assertion inside a scripted model's reply (or any recorded callback) fails its test.
afterEach(rethrowCallbackFailures);
