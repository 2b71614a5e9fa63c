import type { ChildProcess } from "node:child_process";
import { Socket } from "node:net";
import { processIsRunning } from "../../core/process.js";
import { BLOCK_FD } from "../host/bwrap-argv.js";
import type { Interpreters } from "../host/interpreters.js";
import { isAlive, killProcessGroup, setReferenced, waitForExit } from "../run/run-child.js";
import type { Language } from "../types.js";

/**
 * A bwrap sandbox made ahead of need for the next Python run: its cgroup joined, its uid dropped,
 * its namespaces and mounts in place, and bwrap blocked on `BLOCK_FD` just before it loads the
 * seccomp filter and execs the interpreter. The run that takes it pays for its interpreter's start
 * and little else; making the sandbox (four execs and a dozen mounts, ~20 ms here) happened once
 * the run before it was over, while the model wrote the next program.
 */
export class ParkedSandbox {
  private started = false;

  constructor(
    readonly child: ChildProcess,
    /** The interpreter it will exec: only a run of that very Python may take it. */
    private readonly executable: string,
    /** Forgets its record in the run reaper. */
    private readonly forget: () => void,
  ) {
    // A spawn that failed reports it here; the run that would have taken it starts its own.
    child.on("error", () => undefined);
    blockPipe(child)?.on("error", () => undefined);
    // Waiting, it must not keep a CLI or a test runner alive.
    setReferenced(child, false);
  }

  /** Whether a run of `language`, with these interpreters and packages, can start in it now. */
  fits(language: Language, interpreters: Interpreters, packagesDir: string | undefined): boolean {
    return (
      !this.started &&
      language === "python" &&
      packagesDir === undefined &&
      interpreters.python?.executable === this.executable &&
      this.child.pid !== undefined &&
      isAlive(this.child) &&
      // Node learns of a death a turn or more after it: a sandbox killed from outside is a zombie by then.
      processIsRunning(this.child.pid)
    );
  }

  /** Lets bwrap exec the interpreter. The caller owns the child and its reaper record from now on. */
  start(): { child: ChildProcess; forget: () => void } {
    this.started = true;
    setReferenced(this.child, true);
    blockPipe(this.child)?.end("g");
    return { child: this.child, forget: this.forget };
  }

  /** Kills it unused (a run it did not fit took its place, or the launcher closed) and waits for its end. */
  async discard(): Promise<void> {
    if (this.started) return;
    this.started = true;
    killProcessGroup(this.child);
    // A spawn that failed has no pid and may never report an exit.
    if (this.child.pid !== undefined) await waitForExit(this.child);
    this.forget();
  }
}

/** The pipe bwrap blocks on; Node types `stdio` as five entries, so the sixth is read as unknown. */
function blockPipe(child: ChildProcess): Socket | null {
  const pipe: unknown = (child.stdio as readonly unknown[])[BLOCK_FD];
  return pipe instanceof Socket ? pipe : null;
}
