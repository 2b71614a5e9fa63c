import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "examples/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Tests run real interpreters; two cores do not gain from more workers than that.
    maxWorkers: 2,
  },
});
