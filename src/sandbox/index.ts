import { SandboxUnavailableError } from "../core/errors.js";
import { SANDBOX_KINDS } from "../core/run-result.js";
import { BwrapLauncher } from "./bwrap/backend.js";
import { ContainerSandbox } from "./container/backend.js";
import { CONTAINER_IMAGE_ENV, type ContainerOptions, containerImageFor } from "./container/command.js";
import { imagePresent, probeContainerEngine } from "./container/engine.js";
import { GvisorSandbox, probeGvisor } from "./gvisor/backend.js";
import { findBwrapHost } from "./host/bwrap-probe.js";
import { hostNow, type PreparedHost, prepareHost } from "./host/prepare.js";
import { resolveLimits, resolvePoolSize } from "./limits.js";
import { ProcessLauncher, warnProcessBackendOnce } from "./process/backend.js";
import { DeferredSandbox } from "./run/deferred-sandbox.js";
import { LocalSandbox, type PrewarmMode } from "./run/local-sandbox.js";
import type { Language, ManagedSandbox, SandboxKind, SandboxLimits } from "./types.js";

export { buildContainerCommand, type ContainerOptions, DEFAULT_CONTAINER_IMAGES } from "./container/command.js";
export { buildGvisorSpec, probeGvisor } from "./gvisor/backend.js";
export { pythonRunMainSource } from "./host/bootstrap.js";
export { probeBwrap } from "./host/bwrap-probe.js";
export { prepareHost } from "./host/prepare.js";
export { safeRelativePath } from "./host/work-dir.js";
export { DEFAULT_LIMITS, resolveLimits, SANDBOX_POOL_SIZE } from "./limits.js";
export { CODE_FILE_NAME, parseError } from "./parse-error.js";
export { collectArtifacts } from "./run/artifacts.js";
export { RUN_CANCELLED_NOTE } from "./run/run-child.js";
export * from "./types.js";

export interface SandboxOptions {
  /** Backend to use; `auto` (the default) picks bwrap when it works here, else the process backend. */
  kind?: SandboxKind;
  limits?: Partial<SandboxLimits>;
  /**
   * Generated code gets no network; a run reaches the hosts its request names (`allowHosts`) through
   * a proxy, and nothing else. The option exists so callers can say so explicitly.
   */
  network?: false;
  /**
   * Keep an interpreter started ahead of need: `true` (default) warms a language after its first
   * run; a list also warms those languages at once; `false` starts every run cold.
   */
  prewarm?: boolean | readonly Language[];
  /**
   * Local sandboxes (process, bwrap): interpreters kept warm per language, each taken one replaced
   * at once (default 1; see SANDBOX_POOL_SIZE). More serve runs that come faster than one starts.
   */
  poolSize?: number;
  /**
   * bwrap: a Python run that needs an interpreter soon (none is waiting for it, or runs come back
   * to back) gets one forked from a fork server (one interpreter, started once) instead of starting
   * its own; on unless `false` (docs/security.md, "Runs forked from a fork server").
   */
  forkServer?: boolean;
  /** For `kind: "container"`: the engine CLI (default docker) and the image(s). */
  container?: ContainerOptions;
}

/**
 * Makes a sandbox for generated code. Synchronous so graphs and CLIs can build one where they need
 * it; the host is probed once per process, asynchronously: a local sandbox starts probing at once
 * and its first run awaits `prepare()`, so no run blocks the event loop while it is under way.
 * Where bwrap is asked for and cannot run here, `prepare()` and every run reject with
 * SandboxUnavailableError (`checkSandbox` tells before a run).
 */
export function createSandbox(options: SandboxOptions = {}): ManagedSandbox {
  const limits = resolveLimits(options.limits);
  const kind = options.kind ?? "auto";
  const prewarmMode: PrewarmMode = options.prewarm === false ? "off" : "after-first-use";
  const pool: WarmPool = {
    mode: prewarmMode,
    size: resolvePoolSize(options.poolSize),
    forkServer: options.forkServer !== false,
  };

  let sandbox: ManagedSandbox;
  if (kind === "bwrap" || kind === "auto") {
    const local = (host: PreparedHost) => localSandbox(kind, host, limits, pool);
    const deferred = new DeferredSandbox(
      kind === "bwrap" ? "bwrap" : null,
      true,
      async () => local(await prepareHost()),
      () => local(hostNow()),
    );
    // Started now, so the host is probed before the first run asks; a failure is that run's to report.
    deferred.prepare().catch(() => undefined);
    sandbox = deferred;
  } else if (kind === "process") {
    warnProcessBackendOnce();
    sandbox = new LocalSandbox(new ProcessLauncher(limits), limits, pool.mode, pool.size);
  } else if (kind === "container") {
    sandbox = new ContainerSandbox(limits, options.container, prewarmMode);
  } else if (kind === "gvisor") {
    return new GvisorSandbox(limits);
  } else {
    throw new Error(`unknown sandbox kind ${JSON.stringify(kind)}`);
  }
  if (Array.isArray(options.prewarm)) sandbox.prewarm(options.prewarm).catch(() => undefined);
  return sandbox;
}

/** When a local sandbox warms interpreters, and how many per language. */
interface WarmPool {
  mode: PrewarmMode;
  size: number;
  forkServer: boolean;
}

/** The bwrap sandbox where the host allows it; else, for `auto`, the process one (with its warning). */
function localSandbox(kind: "bwrap" | "auto", host: PreparedHost, limits: SandboxLimits, pool: WarmPool): LocalSandbox {
  if (host.bwrap.usable) {
    const launcher = new BwrapLauncher(limits, host.bwrap.host, {
      cgroups: host.cgroups,
      // A run that finds no interpreter waiting is forked; without a fork server, it starts in a
      // sandbox made ahead of it, where no pool keeps interpreters waiting.
      parkSpare: pool.mode === "off" && !pool.forkServer,
      forkServer: pool.forkServer,
    });
    return new LocalSandbox(launcher, limits, pool.mode, pool.size);
  }
  if (kind === "bwrap") throw bwrapUnavailable(host.bwrap.reason);
  warnProcessBackendOnce();
  return new LocalSandbox(new ProcessLauncher(limits), limits, pool.mode, pool.size);
}

/** The end of a "cannot run here" message: the kinds to try instead, from the one list of kinds. */
function otherSandboxes(kind: SandboxKind): string {
  return `or choose another sandbox (${SANDBOX_KINDS.filter((other) => other !== kind).join(", ")})`;
}

/** The error that says why bwrap cannot run here and what to do. */
function bwrapUnavailable(reason: string): SandboxUnavailableError {
  return new SandboxUnavailableError(`the bwrap sandbox is not available: ${reason}; ${otherSandboxes("bwrap")}`);
}

/**
 * Checks that the sandbox `kind` names can run programs here, and throws SandboxUnavailableError
 * saying what to do when it cannot. Call it before a run, so a missing engine costs no model call:
 * a container sandbox otherwise reports each execution as `unavailable` until the run is stuck.
 * `auto` and `process` always pass (auto falls back to process).
 */
export async function checkSandbox(
  options: Pick<SandboxOptions, "kind" | "container"> & {
    /** The languages the run will use: a container sandbox then needs their images here. */
    languages?: readonly Language[];
  } = {},
): Promise<void> {
  const kind = options.kind ?? "auto";
  if (kind === "bwrap") {
    const probe = await findBwrapHost();
    if (!probe.usable) throw bwrapUnavailable(probe.reason);
  }
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
    for (const language of new Set(options.languages ?? [])) {
      const image = containerImageFor(options.container?.image, language);
      if (await imagePresent(engine, image)) continue;
      throw new SandboxUnavailableError(
        `the container sandbox has no image ${image} here: \`${engine} pull ${image}\`, or build one offline with scripts/build-container-image.sh and name it in ${CONTAINER_IMAGE_ENV}; ${otherSandboxes("container")}`,
      );
    }
  }
}

/**
 * Sandboxes made on first use and shared, one per kind and pool size: the agents of one process (a
 * server's, a worker's) draw from one of these, so their runs share warm interpreters and a run's
 * `sandboxPoolSize` setting reaches the sandbox it runs in. Its owner closes it.
 */
export class SharedSandboxes {
  private readonly made = new Map<string, ManagedSandbox>();

  get(kind: SandboxKind, poolSize?: number): ManagedSandbox {
    const key = `${kind}:${poolSize ?? "default"}`;
    let sandbox = this.made.get(key);
    if (!sandbox) {
      sandbox = createSandbox({ kind, ...(poolSize === undefined ? {} : { poolSize }) });
      this.made.set(key, sandbox);
    }
    return sandbox;
  }

  async close(): Promise<void> {
    const sandboxes = [...this.made.values()];
    this.made.clear();
    // Closing waits on child processes that do not hold the event loop open: hold it until they are gone.
    const keepAlive = setInterval(() => undefined, 1_000);
    try {
      await Promise.all(sandboxes.map((sandbox) => sandbox.close()));
    } finally {
      clearInterval(keepAlive);
    }
  }
}
