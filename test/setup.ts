import { afterAll } from "vitest";
import { removeScratchDirs } from "./scratch.js";

// Runs in every test file (vitest.config.ts setupFiles).
afterAll(removeScratchDirs);
