import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "examples/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Tests run real interpreters; two cores do not gain from more workers than that.
    maxWorkers: 2,
    // Type-level tests of the public API (expectTypeOf), checked by tsc as part of `npm test`.
    typecheck: { enabled: true, include: ["test/**/*.test-d.ts"], tsconfig: "./tsconfig.json" },
  },
});
