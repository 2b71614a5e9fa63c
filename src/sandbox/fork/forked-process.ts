import { ChildProcess } from "node:child_process";
import type { Socket } from "node:net";
import { constants as osConstants } from "node:os";

/** A signal's name from its number, as Node names the signal that ended a child. */
const SIGNAL_NAMES = new Map<number, NodeJS.Signals>(
  Object.entries(osConstants.signals).map(([name, number]) => [number, name as NodeJS.Signals]),
);

/** The run's streams: the program's fds 0-3, and the connection its pid 1 reports on. */
export interface ForkedStreams {
  stdin: Socket;
  stdout: Socket;
  stderr: Socket;
  control: Socket;
  status: Socket;
}

/**
 * A run's process made by the fork server (`ForkServer.fork`), shaped as the `ChildProcess` every
 * run is collected through (`collectRun`, the warm pool): its stdio are connections to the
 * program's fds 0-3, `pid` is its pid 1's on the host once the server has said it (a process group
 * of its own, which `killProcessGroup` kills whole), and 'exit' comes from its pid 1's report, or
 * as a SIGKILL when the report's connection closes without one (the run or the server was killed).
 * It never spawned anything, so Node's own process handle is left out.
 */
export class ForkedProcess extends ChildProcess {
  private readonly streams: ForkedStreams;

  constructor(streams: ForkedStreams) {
    super();
    // ChildProcess makes a process handle for spawn(), which never comes: a forked run has none.
    (this as unknown as { _handle: null })._handle = null;
    this.streams = streams;
    const self = this as unknown as {
      stdin: Socket;
      stdout: Socket;
      stderr: Socket;
      stdio: [Socket, Socket, Socket, Socket];
    };
    self.stdin = streams.stdin;
    self.stdout = streams.stdout;
    self.stderr = streams.stderr;
    self.stdio = [streams.stdin, streams.stdout, streams.stderr, streams.control];
    for (const stream of Object.values(streams)) stream.on("error", () => undefined);
  }

  /** Its pid 1's pid on the host, known once the server forked it. */
  setPid(pid: number): void {
    (this as unknown as { pid: number }).pid = pid;
  }

  /** Ends it as a child's exit ends: the status, then 'exit', once. */
  finish(exitStatus: number | null): void {
    if (this.exitCode !== null || this.signalCode !== null) return;
    const self = this as unknown as { exitCode: number | null; signalCode: NodeJS.Signals | null };
    if (exitStatus !== null && exitStatus >= 0) self.exitCode = exitStatus;
    else self.signalCode = (exitStatus === null ? "SIGKILL" : SIGNAL_NAMES.get(-exitStatus)) ?? "SIGKILL";
    this.streams.status.destroy();
    this.emit("exit", this.exitCode, this.signalCode);
  }

  /** Fails before the program started: 'error', then the exit of a child that never ran. */
  fail(error: Error): void {
    if (this.exitCode !== null || this.signalCode !== null) return;
    this.emit("error", error);
    for (const stream of Object.values(this.streams)) stream.destroy();
    this.finish(null);
  }

  override ref(): void {
    this.streams.status.ref();
  }

  override unref(): void {
    this.streams.status.unref();
  }

  override kill(): boolean {
    if (this.pid === undefined) {
      // Not forked yet (or never will be): closing its report's connection stops it before it starts.
      this.streams.status.destroy();
      return true;
    }
    try {
      process.kill(-this.pid, "SIGKILL");
      return true;
    } catch {
      return false;
    }
  }
}
