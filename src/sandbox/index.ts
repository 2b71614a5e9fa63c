import { SandboxUnavailableError } from "../core/errors.js";
import { SANDBOX_KINDS } from "../core/run-result.js";
import { BwrapLauncher } from "./bwrap/backend.js";
import { type ContainerOptions, ContainerSandbox, probeContainerEngine } from "./container/backend.js";
import { GvisorSandbox, probeGvisor } from "./gvisor/backend.js";
import { type BwrapHost, probeBwrap } from "./host/bwrap-probe.js";
import { resolveLimits } from "./limits.js";
import { ProcessLauncher, warnProcessBackendOnce } from "./process/backend.js";
import { LocalSandbox, type PrewarmMode } from "./run/local-sandbox.js";
import type { Language, Sandbox, SandboxIsolation, SandboxKind, SandboxLimits } from "./types.js";

export { buildContainerCommand, type ContainerOptions, DEFAULT_CONTAINER_IMAGES } from "./container/backend.js";
export { buildGvisorSpec, probeGvisor } from "./gvisor/backend.js";
export { probeBwrap } from "./host/bwrap-probe.js";
export { safeRelativePath } from "./host/work-dir.js";
export { DEFAULT_LIMITS, resolveLimits } from "./limits.js";
export { CODE_FILE_NAME, parseError } from "./parse-error.js";
export { collectArtifacts } from "./run/artifacts.js";
export { RUN_CANCELLED_NOTE } from "./run/run-child.js";
export * from "./types.js";

export interface SandboxOptions {
  /** Backend to use; `auto` (the default) picks bwrap when it works here, else the process backend. */
  kind?: SandboxKind;
  limits?: Partial<SandboxLimits>;
  /** Generated code never gets network access; the option exists so callers can say so explicitly. */
  network?: false;
  /**
   * Keep an interpreter started ahead of need: `true` (default) warms a language after its first
   * run; a list also warms those languages at once; `false` starts every run cold.
   */
  prewarm?: boolean | readonly Language[];
  /** For `kind: "container"`: the engine CLI (default docker) and the image(s). */
  container?: ContainerOptions;
}

/** A sandbox that can also be asked to warm interpreters ahead of need. */
export interface ManagedSandbox extends Sandbox {
  /** Starts interpreters for these languages now and resolves once they wait for code. */
  prewarm(languages?: readonly Language[]): Promise<void>;
  close(): Promise<void>;
  describe(): SandboxIsolation;
}

/**
 * Makes a sandbox for generated code. Synchronous so graphs and CLIs can build one where they need
 * it; the bwrap probe runs once per process and interpreters are located on the first run.
 */
export function createSandbox(options: SandboxOptions = {}): ManagedSandbox {
  const limits = resolveLimits(options.limits);
  const kind = options.kind ?? "auto";
  const prewarmMode: PrewarmMode = options.prewarm === false ? "off" : "after-first-use";

  let sandbox: LocalSandbox;
  if (kind === "bwrap") {
    sandbox = new LocalSandbox(new BwrapLauncher(limits, requireBwrap()), limits, prewarmMode);
  } else if (kind === "auto") {
    const probe = probeBwrap();
    if (probe.usable) {
      sandbox = new LocalSandbox(new BwrapLauncher(limits, probe.host), limits, prewarmMode);
    } else {
      warnProcessBackendOnce();
      sandbox = new LocalSandbox(new ProcessLauncher(limits), limits, prewarmMode);
    }
  } else if (kind === "process") {
    warnProcessBackendOnce();
    sandbox = new LocalSandbox(new ProcessLauncher(limits), limits, prewarmMode);
  } else if (kind === "container") {
    const container = new ContainerSandbox(limits, options.container, prewarmMode);
    if (Array.isArray(options.prewarm)) void container.prewarm(options.prewarm);
    return container;
  } else if (kind === "gvisor") {
    return new GvisorSandbox(limits);
  } else {
    throw new Error(`unknown sandbox kind ${JSON.stringify(kind)}`);
  }
  if (Array.isArray(options.prewarm)) void sandbox.prewarm(options.prewarm);
  return sandbox;
}

/** The end of a "cannot run here" message: the kinds to try instead, from the one list of kinds. */
function otherSandboxes(kind: SandboxKind): string {
  return `or choose another sandbox (${SANDBOX_KINDS.filter((other) => other !== kind).join(", ")})`;
}

/** The bwrap host, or the error that says why bwrap cannot run here and what to do. */
function requireBwrap(): BwrapHost {
  const probe = probeBwrap();
  if (probe.usable) return probe.host;
  throw new SandboxUnavailableError(`the bwrap sandbox is not available: ${probe.reason}; ${otherSandboxes("bwrap")}`);
}

/**
 * Checks that the sandbox `kind` names can run programs here, and throws SandboxUnavailableError
 * saying what to do when it cannot. Call it before a run, so a missing engine costs no model call:
 * a container sandbox otherwise reports each execution as `unavailable` until the run is stuck.
 * `auto` and `process` always pass (auto falls back to process).
 */
export async function checkSandbox(options: Pick<SandboxOptions, "kind" | "container"> = {}): Promise<void> {
  const kind = options.kind ?? "auto";
  if (kind === "bwrap") requireBwrap();
  if (kind === "gvisor") {
    const problem = probeGvisor();
    if (problem !== null) {
      throw new SandboxUnavailableError(`the gvisor sandbox is not available: ${problem}; ${otherSandboxes("gvisor")}`);
    }
  }
  if (kind === "container") {
    const engine = options.container?.command ?? "docker";
    const problem = await probeContainerEngine(engine);
    if (problem !== null) {
      const sentence = /[.?!]$/.test(problem) ? problem : `${problem}.`;
      throw new SandboxUnavailableError(
        `the container sandbox cannot use ${engine}: ${sentence} Install or start ${engine} (or point ${engine === "docker" ? "DOCKER_HOST" : "CONTAINER_HOST"} at a running engine), ${otherSandboxes("container")}`,
      );
    }
  }
}
