import type { Language, ManagedSandbox, RunHooks, RunRequest, RunResult, SandboxIsolation } from "../types.js";

/**
 * A sandbox whose backend is made once the host has been probed, without blocking the event loop:
 * `prepare()` starts it (`createSandbox` calls it at once) and every run awaits it, so a first run
 * in a dev server or a worker never stalls the others. What must answer synchronously (`kind` for
 * `auto`, `describe()`) before preparation is over makes the backend on the spot, blocking.
 */
export class DeferredSandbox implements ManagedSandbox {
  readonly mountsPackages: boolean;
  private made: ManagedSandbox | undefined;
  private making: Promise<ManagedSandbox> | undefined;
  private closed = false;

  constructor(
    /** The kind when it is known before probing (`bwrap`); null for `auto`. */
    private readonly knownKind: ManagedSandbox["kind"] | null,
    mountsPackages: boolean,
    private readonly make: () => Promise<ManagedSandbox>,
    private readonly makeNow: () => ManagedSandbox,
  ) {
    this.mountsPackages = mountsPackages;
  }

  get kind(): ManagedSandbox["kind"] {
    return this.knownKind ?? this.now().kind;
  }

  get egress(): ManagedSandbox["egress"] {
    return this.now().egress;
  }

  /** Probes the host and makes the backend; resolves once runs can start. Safe to call repeatedly. */
  async prepare(): Promise<void> {
    await this.backend();
  }

  async run(request: RunRequest, hooks?: RunHooks): Promise<RunResult> {
    return (await this.backend()).run(request, hooks);
  }

  describe(): SandboxIsolation {
    return this.now().describe();
  }

  async prewarm(languages?: readonly Language[]): Promise<void> {
    await (await this.backend()).prewarm(languages);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (!this.made && !this.making) return;
    const backend = await this.backend().catch(() => undefined);
    await backend?.close();
  }

  private backend(): Promise<ManagedSandbox> {
    if (this.made) return Promise.resolve(this.made);
    this.making ??= this.make().then(async (backend) => {
      // A blocking `now()` may have made one meanwhile: that one stays, this one goes.
      if (this.made && this.made !== backend) {
        await backend.close();
        return this.made;
      }
      this.made = backend;
      if (this.closed) await backend.close();
      return backend;
    });
    return this.making;
  }

  private now(): ManagedSandbox {
    this.made ??= this.makeNow();
    return this.made;
  }
}
