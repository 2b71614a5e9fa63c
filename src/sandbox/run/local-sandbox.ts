import type { ChildProcess } from "node:child_process";
import { Socket } from "node:net";
import { performance } from "node:perf_hooks";
import { pathInsideWorkDir } from "../../core/data-files.js";
import { filesHeldByInterpreter, JUDGE_RUN_FILES, sendGo, takesProgramWithGo } from "../host/bootstrap.js";
import type { WarmStart } from "../host/command.js";
import { InterpreterMissingError } from "../host/interpreters.js";
import type { WorkDir } from "../host/work-dir.js";
import { limitsForRun, SANDBOX_POOL_SIZE, sameStartLimits } from "../limits.js";
import { CODE_FILE_NAME } from "../parse-error.js";
import type { Language, RunHooks, RunRequest, RunResult, Sandbox, SandboxIsolation, SandboxLimits } from "../types.js";
import { collectArtifacts } from "./artifacts.js";
import { type RunEgress, type RunEgressOptions, withRunEgress } from "./egress.js";
import {
  collectOptionsFor,
  collectRun,
  isAlive,
  type LaunchedProgram,
  setReferenced,
  unavailableResult,
  waitForExit,
} from "./run-child.js";

/** What one run holds from its backend: a work dir (and, for bwrap, a uid) until released. */
export interface Reservation {
  workDir: WorkDir;
  /**
   * Starts the interpreter. With `warm`, it loads, applies its limits, writes "r" on fd 3 and then
   * waits there for "g" before reading main.py; otherwise it runs main.py at once. With `egress`,
   * the program reaches the run's proxy (its socket bound into the sandbox, its variables set).
   * With `fork`, an interpreter the launcher can fork (bwrap's fork server) is forked instead:
   * ready sooner, but its run pays for the pages it copies (~3 ms of a `print(1)` here).
   */
  spawn(language: Language, warm: WarmStart, packagesDir?: string, egress?: RunEgress, fork?: boolean): LaunchedProgram;
  /** Gives back the work dir and anything else reserved; called once the program is dead. */
  release(): Promise<void>;
}

/** A backend that runs programs on this machine: the plain process one or bwrap. */
export interface Launcher {
  readonly kind: "process" | "bwrap";
  /** How a run's egress proxy is reached from this launcher's programs (see `startRunEgress`). */
  readonly egress: RunEgressOptions;
  /**
   * A work dir and the interpreters, the Python being `python` when given (else the default), for
   * a run under `limits` (else the launcher's own).
   */
  reserve(python?: string, limits?: SandboxLimits): Promise<Reservation>;
  describe(): SandboxIsolation;
  /** Gives back what the launcher keeps ahead of need (a spare cgroup). */
  close?(): Promise<void>;
  /** Readies what pre-warmed interpreters come from (bwrap's fork server) before the pool fills. */
  prewarm?(): Promise<void>;
}

/** When to keep an interpreter started ahead of need. */
export type PrewarmMode = "off" | "after-first-use";

interface WarmProgram {
  reservation: Reservation;
  program: LaunchedProgram;
  control: Socket;
  /** Resolves when the interpreter has loaded and waits for its code. */
  ready: Promise<void>;
  /** Whether it said, when ready, that it holds the judge compiled ("j"): its judged runs need no judge file. */
  holdsJudge: boolean;
}

/** How a run may start: from a waiting interpreter, and again where its sandbox's setup failed. */
interface RunStart {
  mayTakeWarm: boolean;
  mayRestart: boolean;
}

/**
 * How one language's runs have come lately: when the last one ended, how long an interpreter took
 * to load, and whether the last one was judged with its tests in a process of their own (the next
 * likely is too, and its interpreter then makes the program's process ahead: `WarmStart`).
 */
interface Pace {
  lastEndedAt: number;
  loadMs: number;
  judged: boolean;
}

/** One place in a language's pool: an interpreter being started, or started and waiting. */
interface PoolEntry {
  /** The interpreter once spawned; null when it could not start (or the sandbox closed first). */
  warm: Promise<WarmProgram | null>;
}

/**
 * A `Sandbox` on top of a local launcher. Each run gets a fresh work dir and interpreter that is
 * thrown away afterwards, so nothing leaks between runs. With pre-warming, each language keeps a
 * pool of `poolSize` interpreters started ahead of need: a run takes one, and its replacement
 * starts when the run ends, or, where runs come back to back (sooner after each other than an
 * interpreter takes to load) and the run took the last one, while it executes: the next run, even
 * one that comes the moment this one returns, finds an interpreter already started and pays only
 * for its files, its code and whatever of the loading is left.
 */
export class LocalSandbox implements Sandbox {
  readonly kind: "process" | "bwrap";
  readonly mountsPackages = true;

  get egress(): "enforced" | "offered" {
    return this.launcher.egress.enforced ? "enforced" : "offered";
  }
  private readonly pools = new Map<Language, PoolEntry[]>();
  private readonly pendingReleases = new Set<Promise<unknown>>();
  private readonly pace = new Map<Language, Pace>();
  private closed = false;

  constructor(
    private readonly launcher: Launcher,
    private readonly limits: SandboxLimits,
    private readonly prewarmMode: PrewarmMode,
    /** Interpreters kept warm per language. */
    private readonly poolSize: number = SANDBOX_POOL_SIZE.default,
  ) {
    this.kind = launcher.kind;
  }

  describe(): SandboxIsolation {
    return this.launcher.describe();
  }

  /** The launcher comes with the host already probed (see DeferredSandbox): nothing is left to do. */
  async prepare(): Promise<void> {}

  run(request: RunRequest, hooks?: RunHooks): Promise<RunResult> {
    return this.runFrom(performance.now(), request, hooks, { mayTakeWarm: true, mayRestart: true });
  }

  private async runFrom(
    startedAt: number,
    request: RunRequest,
    hooks: RunHooks | undefined,
    start: RunStart,
  ): Promise<RunResult> {
    const limits = limitsForRun(this.limits, request);
    // A warm interpreter was started without packages mounted, with the default Python and under
    // the sandbox's own limits, so a run that needs packages, names its own Python or asks other
    // limits (more memory, say) goes cold; the warm ones wait for the next runs they fit.
    const python = request.language === "python" ? request.python : undefined;
    // A run with network starts cold: its sandbox binds the run's own proxy, which no warm one has.
    const allowHosts = request.allowHosts ?? [];
    const fitsWarm = !request.packagesDir && !python && allowHosts.length === 0 && sameStartLimits(this.limits, limits);
    this.paceOf(request.language).judged = request.files?.[JUDGE_RUN_FILES[request.language]] !== undefined;
    const warm = fitsWarm && start.mayTakeWarm ? await this.takeWarm(request.language) : null;

    return withRunEgress(allowHosts, limits, this.launcher.egress, startedAt, (egress) =>
      this.runWith(startedAt, request, hooks, { warm, limits, python, egress, start }),
    );
  }

  private async runWith(
    startedAt: number,
    request: RunRequest,
    hooks: RunHooks | undefined,
    {
      warm,
      limits,
      python,
      egress,
      start,
    }: {
      warm: WarmProgram | null;
      limits: SandboxLimits;
      python: string | undefined;
      egress: RunEgress | undefined;
      start: RunStart;
    },
  ): Promise<RunResult> {
    const reservation = warm?.reservation ?? (await this.launcher.reserve(python, limits));
    // A warm Python interpreter takes its program with the go and writes main.py itself.
    const programWithGo = warm !== null && takesProgramWithGo(warm.program);
    try {
      await writeProgramFiles(reservation.workDir, request, {
        code: !programWithGo,
        held: warm?.holdsJudge ? filesHeldByInterpreter(request.language, request.files) : [],
      });
    } catch (error) {
      if (warm) warm.program.killAll();
      await reservation.release();
      throw error;
    }
    if (warm && !waitsForGo(warm)) {
      // It died while the files were written (killed from outside, or its start failed): the
      // program has not run, and runs cold instead.
      warm.program.killAll();
      this.releaseLater(warm.reservation, warm.program.child);
      return this.runFrom(startedAt, request, hooks, { ...start, mayTakeWarm: false });
    }

    let program: LaunchedProgram;
    let release: (() => void) | undefined;
    if (warm) {
      program = warm.program;
      // The control pipe is one of the child's stdio: it is referenced with them.
      setReferenced(program.child, true);
      const backToBack = this.comesBackToBack(request.language, startedAt);
      release = () => {
        sendGo(warm.program, programWithGo ? request.code : undefined);
        // Where this run took the last one and runs come back to back (an instant model, a batch
        // loop), the replacement starts now, while the run executes, so the next run does not go
        // cold. Spawning blocks the event loop (fork and exec: ~10 ms here), which this run then
        // pays: where runs come further apart, or another interpreter still waits, the refill
        // waits for the run's end.
        const left = this.pools.get(request.language)?.length ?? 0;
        // Made soonest by a fork: the next run comes before an interpreter could start.
        if (this.prewarmMode !== "off" && left === 0 && backToBack) this.fill(request.language, { fork: true });
      };
    } else {
      try {
        // A run that waits for its interpreter gets the one made soonest.
        program = reservation.spawn(request.language, false, request.packagesDir, egress, true);
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
      if (!(start.mayRestart && program.failedInSetup?.(result))) {
        // A run that reported its end may still be dying: what it left is taken once it is dead.
        if (request.collectArtifacts) await waitForExit(program.child);
        return await withArtifacts(result, reservation.workDir, request);
      }
    } finally {
      this.paceOf(request.language).lastEndedAt = performance.now();
      if (warm) warm.control.destroy();
      // After a cold run (the language's first, or one the pool did not fit), the pool fills up.
      // Started, not forked: the next run likely comes later (a model writes it), and a started
      // interpreter's run is the faster one.
      if (this.prewarmMode !== "off") this.fill(request.language, { fork: false });
      // Removing the work dir takes a few milliseconds the caller need not wait for; close() does.
      this.releaseLater(reservation, program.child);
    }
    // The sandbox's own setup failed before the program's first line (bwrap's bind of the host's
    // root meeting a mount that docker changed at that moment, in CI): nothing ran, and it starts
    // once more, on a fresh reservation.
    return this.runFrom(startedAt, request, hooks, { mayTakeWarm: false, mayRestart: false });
  }

  /**
   * Fills each language's pool now and resolves once every interpreter in it is ready, so the
   * next runs of each are pre-warmed ones. Benchmarks and long-lived callers use it.
   */
  async prewarm(languages: readonly Language[] = ["python", "javascript"]): Promise<void> {
    // Idle interpreters are unreferenced; this timer keeps the caller alive while it waits for them.
    const keepAlive = setInterval(() => undefined, 60_000);
    try {
      await this.launcher.prewarm?.();
      for (const language of languages) this.fill(language, { fork: false });
      await this.whenWarm(languages);
    } finally {
      clearInterval(keepAlive);
    }
  }

  private async whenWarm(languages: readonly Language[]): Promise<void> {
    const entries = languages.flatMap((language) => this.pools.get(language) ?? []);
    await Promise.all(
      entries.map(async (entry) => {
        const warm = await entry.warm;
        await warm?.ready;
      }),
    );
  }

  private releaseLater(reservation: Reservation, child?: ChildProcess): void {
    // On the next turn of the loop: an unmount spawns umount(8), which blocks for a few ms, and the
    // caller should have its result first. A run that ended on its report is dead only once its
    // child has exited: its uid, cgroup and work dir are given back after that.
    const pending = new Promise((resolve) => setImmediate(resolve))
      .then(() => (child ? waitForExit(child) : undefined))
      .then(() => reservation.release())
      .catch(() => undefined);
    this.pendingReleases.add(pending);
    void pending.finally(() => this.pendingReleases.delete(pending));
  }

  async close(): Promise<void> {
    this.closed = true;
    const entries = [...this.pools.values()].flat();
    this.pools.clear();
    // The warm children are unreferenced; without this timer Node could exit halfway through close().
    const keepAlive = setInterval(() => undefined, 60_000);
    try {
      await Promise.all(
        entries.map(async (entry) => {
          const warm = await entry.warm;
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

  /** Whether a run starting at `startedAt` came sooner after the last one ended than an interpreter takes to load. */
  private comesBackToBack(language: Language, startedAt: number): boolean {
    const pace = this.pace.get(language);
    return pace !== undefined && startedAt - pace.lastEndedAt < pace.loadMs;
  }

  /** The language's pace record, made on first use (no run ended yet, no load measured). */
  private paceOf(language: Language): Pace {
    let pace = this.pace.get(language);
    if (!pace) {
      pace = { lastEndedAt: 0, loadMs: 0, judged: false };
      this.pace.set(language, pace);
    }
    return pace;
  }

  /** The oldest interpreter of the pool that is still alive (it may still be loading), or null. */
  private async takeWarm(language: Language): Promise<WarmProgram | null> {
    const pool = this.pools.get(language) ?? [];
    for (let entry = pool.shift(); entry; entry = pool.shift()) {
      const warm = await entry.warm;
      if (!warm) continue;
      if (waitsForGo(warm)) return warm;
      warm.program.killAll();
      await warm.reservation.release();
    }
    return null;
  }

  /** Starts interpreters until the language's pool holds `poolSize`, counting those still starting. */
  private fill(language: Language, { fork }: { fork: boolean }): void {
    if (this.closed) return;
    let pool = this.pools.get(language);
    if (!pool) {
      pool = [];
      this.pools.set(language, pool);
    }
    while (pool.length < this.poolSize) {
      const entry: PoolEntry = { warm: Promise.resolve(null) };
      entry.warm = this.startWarming(language, entry, fork);
      pool.push(entry);
    }
  }

  /**
   * Spawning blocks the event loop for a few milliseconds, so the interpreter is started on the
   * next turn of the loop, after the run that asked for it has sent its program on its way.
   */
  private async startWarming(language: Language, entry: PoolEntry, fork: boolean): Promise<WarmProgram | null> {
    await new Promise((resolve) => setImmediate(resolve));
    const warm = this.closed ? null : await this.spawnWarm(language, entry, fork).catch(() => null);
    // One that could not start gives back its place; the next run goes cold and fills it again.
    if (!warm) this.forget(language, entry);
    return warm;
  }

  /** Takes `entry` out of its pool, if it is still there; true when it was. */
  private forget(language: Language, entry: PoolEntry): boolean {
    const pool = this.pools.get(language) ?? [];
    const index = pool.indexOf(entry);
    if (index === -1) return false;
    pool.splice(index, 1);
    return true;
  }

  private async spawnWarm(language: Language, entry: PoolEntry, fork: boolean): Promise<WarmProgram | null> {
    const spawnedAt = performance.now();
    const reservation = await this.launcher.reserve();
    let program: LaunchedProgram;
    try {
      program = reservation.spawn(
        language,
        this.paceOf(language).judged ? (fork ? "judged-busy" : "judged") : "warm",
        undefined,
        undefined,
        fork,
      );
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
    // The control pipe (stdio[3]) included.
    setReferenced(program.child, false);
    const warm: WarmProgram = { reservation, program, control, ready: Promise.resolve(), holdsJudge: false };
    warm.ready = new Promise<void>((resolve) => {
      control.once("data", (said: Buffer) => {
        this.paceOf(language).loadMs = performance.now() - spawnedAt;
        warm.holdsJudge = said.includes("j");
        resolve();
      });
      control.once("close", () => resolve());
      program.child.once("exit", () => resolve());
    });
    control.on("error", () => undefined);
    // One that fails before a run takes it (a fork whose run folder went with close()) is gone as
    // one that died: its exit gives back its place. A run that takes it listens for itself.
    program.child.on("error", () => undefined);
    // A warm interpreter that dies before use (killed from outside, say) just gives back its place.
    program.child.once("exit", () => {
      if (this.forget(language, entry)) void reservation.release().catch(() => undefined);
    });
    return warm;
  }
}

/** Whether a warm interpreter is still there to take its go, as far as Node has seen. */
function waitsForGo(warm: WarmProgram): boolean {
  return isAlive(warm.program.child) && !warm.control.destroyed;
}

/**
 * Writes the request's extra files, inputs and code into the work dir; every backend with a host
 * work dir uses it. `code: false` leaves the code out, for an interpreter that takes it with the go.
 * A file or input named like the code file is left out: the code replaces it in any case (it went
 * last when each was written), and a pre-warmed interpreter holds that file open already.
 */
export async function writeProgramFiles(
  workDir: WorkDir,
  request: RunRequest,
  { code = true, held = [] }: { code?: boolean; held?: readonly string[] } = {},
): Promise<void> {
  const codeFile = CODE_FILE_NAME[request.language];
  const notTheCode = (name: string) => pathInsideWorkDir(name) !== codeFile;
  for (const [name, content] of Object.entries(request.files ?? {})) {
    if (notTheCode(name) && !held.includes(name)) await workDir.writeFile(name, content);
  }
  for (const input of request.inputs ?? []) {
    if (notTheCode(input.name)) await workDir.writeInput(input.name, input.content);
  }
  if (request.collectArtifacts) await workDir.makeArtifactsFolder();
  if (code) await workDir.writeFile(codeFile, request.code);
}

/** The run's result with what it left under `out/`, when the request asks; call it once the program is dead. */
export async function withArtifacts(result: RunResult, workDir: WorkDir, request: RunRequest): Promise<RunResult> {
  if (!request.collectArtifacts) return result;
  return { ...result, artifacts: await collectArtifacts(workDir.path, request.collectArtifacts) };
}
