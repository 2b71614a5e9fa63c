import { createSandbox, type ManagedSandbox, type SandboxOptions } from "../../src/sandbox/index.js";

/**
 * A bwrap sandbox whose Python runs are forked from its fork server, for the suites that must hold
 * on forked runs (hostile, conformance): with no pool, a run that fits the server (the default
 * Python, the sandbox's own limits, no packages, no allowHosts) is forked on demand, once the
 * server runs; the first Python run waits for it.
 */
export function forkedPythonRunsSandbox(
  options: Omit<SandboxOptions, "kind" | "prewarm" | "forkServer">,
): ManagedSandbox {
  const sandbox = createSandbox({ ...options, kind: "bwrap", prewarm: false });
  let ready: Promise<void> | null = null;
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
      // No languages: it waits for the fork server and starts no interpreter.
      if (request.language === "python") {
        ready ??= sandbox.prewarm([]);
        await ready;
      }
      return sandbox.run(request, hooks);
    },
    prepare: () => sandbox.prepare(),
    prewarm: (languages) => sandbox.prewarm(languages),
    close: () => sandbox.close(),
    describe: () => sandbox.describe(),
  };
}
