import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "examples/**/*.test.ts"],
    // Deadlines for a hang, not speed checks: end-to-end tests start real processes, which on a busy
    // two-core CI machine take many times longer than on a quiet one.
    testTimeout: 180_000,
    hookTimeout: 120_000,
    // Tests run real interpreters; two cores do not gain from more workers than that.
    maxWorkers: 2,
    // A temp dir of the run's own, checked empty at the end, and the repository's .selfheal/ untouched.
    globalSetup: ["test/helpers/global-setup.ts"],
    // Removes every scratchDir() a test file made once its tests are over.
    setupFiles: ["test/helpers/setup.ts"],
    // Tests run generated code with the process backend on purpose; its warning would be noise in
    // the output (a test can still see it through process.on("warning")).
    execArgv: ["--disable-warning=SELFHEAL_PROCESS_SANDBOX"],
    // Type-level tests of the public API (expectTypeOf), checked by tsc as part of `npm test`.
    typecheck: { enabled: true, include: ["test/**/*.test-d.ts"], tsconfig: "./tsconfig.json" },
  },
});
