import type { ManagedSandbox } from "../../src/sandbox/index.js";

/**
 * A bwrap sandbox whose Python runs are forked from its fork server, for the suites that must hold
 * on forked runs (hostile, conformance): before each Python run it waits for a forked interpreter.
 * The interpreter a pool made before its server ran is a cold one; a first run takes it.
 */
export function withForkedPythonRuns(sandbox: ManagedSandbox): ManagedSandbox {
  let ready: Promise<void> | null = null;
  const readyOnce = (): Promise<void> => {
    ready ??= (async () => {
      await sandbox.prewarm(["python"]);
      await sandbox.run({ language: "python", code: "pass" });
    })();
    return ready;
  };
  return {
    get kind() {
      return sandbox.kind;
    },
    get mountsPackages() {
      return sandbox.mountsPackages;
    },
    get egress() {
      return sandbox.egress;
    },
    run: async (request, hooks) => {
      if (request.language === "python") {
        await readyOnce();
        await sandbox.prewarm(["python"]);
      }
      return sandbox.run(request, hooks);
    },
    prepare: () => sandbox.prepare(),
    prewarm: (languages) => sandbox.prewarm(languages),
    close: () => sandbox.close(),
    describe: () => sandbox.describe(),
  };
}
