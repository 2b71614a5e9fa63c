import type { ChildProcess } from "node:child_process";
import { Socket } from "node:net";
import { performance } from "node:perf_hooks";
import { InterpreterMissingError } from "../host/interpreters.js";
import type { WorkDir } from "../host/work-dir.js";
import { limitsForRun, sameStartLimits } from "../limits.js";
import { CODE_FILE_NAME } from "../parse-error.js";
import type { Language, RunHooks, RunRequest, RunResult, Sandbox, SandboxIsolation, SandboxLimits } from "../types.js";
import { collectArtifacts } from "./artifacts.js";
import { collectOptionsFor, collectRun, type LaunchedProgram, unavailableResult } from "./run-child.js";

/** What one run holds from its backend: a work dir (and, for bwrap, a uid) until released. */
export interface Reservation {
  workDir: WorkDir;
  /**
   * Starts the interpreter. With `warm`, it loads, applies its limits, writes "r" on fd 3 and then
   * waits there for "g" before reading main.py; otherwise it runs main.py at once.
   */
  spawn(language: Language, warm: boolean, packagesDir?: string): LaunchedProgram;
  /** Gives back the work dir and anything else reserved; called once the program is dead. */
  release(): Promise<void>;
}

/** A backend that runs programs on this machine: the plain process one or bwrap. */
export interface Launcher {
  readonly kind: "process" | "bwrap";
  /**
   * A work dir and the interpreters, the Python being `python` when given (else the default), for
   * a run under `limits` (else the launcher's own).
   */
  reserve(python?: string, limits?: SandboxLimits): Promise<Reservation>;
  describe(): SandboxIsolation;
  /** Gives back what the launcher keeps ahead of need (a spare cgroup). */
  close?(): Promise<void>;
}

/** When to keep an interpreter started ahead of need. */
export type PrewarmMode = "off" | "after-first-use";

interface WarmProgram {
  reservation: Reservation;
  program: LaunchedProgram;
  control: Socket;
  /** Resolves when the interpreter has loaded and waits for its code. */
  ready: Promise<void>;
}

/**
 * A `Sandbox` on top of a local launcher. Each run gets a fresh work dir and interpreter that is
 * thrown away afterwards, so nothing leaks between runs. With pre-warming, the interpreter for the
 * next run of the same language is started right after a run returns, so the next run only pays
 * for writing its files and executing the code, not for starting Python or Node.
 */
export class LocalSandbox implements Sandbox {
  readonly kind: "process" | "bwrap";
  readonly mountsPackages = true;
  private readonly warm = new Map<Language, Promise<WarmProgram | null>>();
  private readonly pendingReleases = new Set<Promise<unknown>>();
  private readonly scheduled = new Map<Language, NodeJS.Immediate>();
  private closed = false;

  constructor(
    private readonly launcher: Launcher,
    private readonly limits: SandboxLimits,
    private readonly prewarmMode: PrewarmMode,
  ) {
    this.kind = launcher.kind;
  }

  describe(): SandboxIsolation {
    return this.launcher.describe();
  }

  /** The launcher comes with the host already probed (see DeferredSandbox): nothing is left to do. */
  async prepare(): Promise<void> {}

  async run(request: RunRequest, hooks?: RunHooks): Promise<RunResult> {
    const startedAt = performance.now();
    const limits = limitsForRun(this.limits, request);
    // A run that arrives before the next interpreter even started goes cold; starting that one too
    // would only compete with this run for the CPU.
    this.cancelScheduledWarming(request.language);
    // A warm interpreter was started without packages mounted, with the default Python and under
    // the sandbox's own limits, so a run that needs packages, names its own Python or asks other
    // limits (more memory, say) goes cold; the warm one waits for the next run it fits.
    const python = request.language === "python" ? request.python : undefined;
    const fitsWarm = !request.packagesDir && !python && sameStartLimits(this.limits, limits);
    const warm = fitsWarm ? await this.takeWarm(request.language) : null;

    const reservation = warm?.reservation ?? (await this.launcher.reserve(python, limits));
    try {
      await writeProgramFiles(reservation.workDir, request);
    } catch (error) {
      if (warm) warm.program.killAll();
      await reservation.release();
      throw error;
    }

    let program: LaunchedProgram;
    let release: (() => void) | undefined;
    if (warm) {
      program = warm.program;
      setReferenced(program.child, true);
      warm.control.ref();
      release = () => {
        warm.control.end("g");
      };
    } else {
      try {
        program = reservation.spawn(request.language, false, request.packagesDir);
      } catch (error) {
        this.releaseLater(reservation);
        if (error instanceof InterpreterMissingError) return unavailableResult(error.message, startedAt);
        throw error;
      }
    }

    try {
      const result = await collectRun(program, {
        ...collectOptionsFor(request, limits, startedAt, hooks),
        ...(release ? { release } : {}),
      });
      return await withArtifacts(result, reservation.workDir, request);
    } finally {
      if (warm) warm.control.destroy();
      if (this.prewarmMode !== "off") this.scheduleWarming(request.language);
      // Removing the work dir takes a few milliseconds the caller need not wait for; close() does.
      this.releaseLater(reservation);
    }
  }

  /**
   * Starts an interpreter for each language now (if none is waiting) and resolves once they are
   * ready, so the next run of each is a pre-warmed one. Benchmarks and long-lived callers use it.
   */
  async prewarm(languages: readonly Language[] = ["python", "javascript"]): Promise<void> {
    for (const language of languages) this.startWarming(language);
    // Idle interpreters are unreferenced; this timer keeps the caller alive while it waits for them.
    const keepAlive = setInterval(() => undefined, 60_000);
    try {
      await this.whenWarm(languages);
    } finally {
      clearInterval(keepAlive);
    }
  }

  private async whenWarm(languages: readonly Language[]): Promise<void> {
    await Promise.all(
      languages.map(async (language) => {
        const warm = await this.warm.get(language);
        await warm?.ready;
      }),
    );
  }

  private releaseLater(reservation: Reservation): void {
    // On the next turn of the loop: an unmount spawns umount(8), which blocks for a few ms, and the
    // caller should have its result first.
    const pending = new Promise((resolve) => setImmediate(resolve))
      .then(() => reservation.release())
      .catch(() => undefined);
    this.pendingReleases.add(pending);
    void pending.finally(() => this.pendingReleases.delete(pending));
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const language of [...this.scheduled.keys()]) this.cancelScheduledWarming(language);
    const pending = [...this.warm.values()];
    this.warm.clear();
    // The warm children are unreferenced; without this timer Node could exit halfway through close().
    const keepAlive = setInterval(() => undefined, 60_000);
    try {
      await Promise.all(
        pending.map(async (entry) => {
          const warm = await entry;
          if (!warm) return;
          warm.program.killAll();
          warm.control.destroy();
          await waitForExit(warm.program.child);
          await warm.reservation.release();
        }),
      );
      await Promise.all(this.pendingReleases);
      await this.launcher.close?.();
    } finally {
      clearInterval(keepAlive);
    }
  }

  private async takeWarm(language: Language): Promise<WarmProgram | null> {
    const entry = this.warm.get(language);
    if (!entry) return null;
    this.warm.delete(language);
    const warm = await entry;
    if (!warm) return null;
    if (!isAlive(warm.program.child) || warm.control.destroyed) {
      warm.program.killAll();
      await warm.reservation.release();
      return null;
    }
    return warm;
  }

  /**
   * Spawning blocks the event loop for a few milliseconds, so the next interpreter is started on
   * the next turn of the loop, after this run's caller has its result.
   */
  private scheduleWarming(language: Language): void {
    if (this.scheduled.has(language)) return;
    this.scheduled.set(
      language,
      setImmediate(() => {
        this.scheduled.delete(language);
        this.startWarming(language);
      }),
    );
  }

  private cancelScheduledWarming(language: Language): void {
    const pending = this.scheduled.get(language);
    if (pending) clearImmediate(pending);
    this.scheduled.delete(language);
  }

  private startWarming(language: Language): void {
    if (this.closed || this.warm.has(language)) return;
    const entry = this.spawnWarm(language).catch(() => null);
    this.warm.set(language, entry);
  }

  private async spawnWarm(language: Language): Promise<WarmProgram | null> {
    const reservation = await this.launcher.reserve();
    let program: LaunchedProgram;
    try {
      program = reservation.spawn(language, true);
    } catch (error) {
      await reservation.release();
      throw error;
    }
    const control = program.child.stdio[3];
    if (!(control instanceof Socket)) {
      program.killAll();
      await reservation.release();
      return null;
    }
    // An idle interpreter must not keep the caller's process (a CLI, a test runner) alive.
    setReferenced(program.child, false);
    control.unref();
    const ready = new Promise<void>((resolve) => {
      control.once("data", () => resolve());
      control.once("close", () => resolve());
      program.child.once("exit", () => resolve());
    });
    control.on("error", () => undefined);
    const warm: WarmProgram = { reservation, program, control, ready };
    // A warm interpreter that dies before use (killed from outside, say) just gives back its slot.
    program.child.once("exit", () => {
      void this.warm.get(language)?.then(async (current) => {
        if (current === warm) {
          this.warm.delete(language);
          await reservation.release();
        }
      });
    });
    return warm;
  }
}

/** Writes the request's extra files, inputs and code into the work dir; every backend with a host work dir uses it. */
export async function writeProgramFiles(workDir: WorkDir, request: RunRequest): Promise<void> {
  for (const [name, content] of Object.entries(request.files ?? {})) {
    await workDir.writeFile(name, content);
  }
  for (const input of request.inputs ?? []) await workDir.writeInput(input.name, input.content);
  if (request.collectArtifacts) await workDir.makeArtifactsFolder();
  // The code goes last so a stray `files["main.py"]` cannot replace it.
  await workDir.writeFile(CODE_FILE_NAME[request.language], request.code);
}

/** The run's result with what it left under `out/`, when the request asks; call it once the program is dead. */
export async function withArtifacts(result: RunResult, workDir: WorkDir, request: RunRequest): Promise<RunResult> {
  if (!request.collectArtifacts) return result;
  return { ...result, artifacts: await collectArtifacts(workDir.path, request.collectArtifacts) };
}

function isAlive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Refs or unrefs the child and its pipes, which each hold the event loop open on their own. */
function setReferenced(child: ChildProcess, referenced: boolean): void {
  if (referenced) child.ref();
  else child.unref();
  for (const stream of [child.stdin, child.stdout, child.stderr]) {
    if (stream instanceof Socket) {
      if (referenced) stream.ref();
      else stream.unref();
    }
  }
}

function waitForExit(child: ChildProcess): Promise<void> {
  if (!isAlive(child)) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}
