/**
 * Every error selfheal throws on purpose. Catch them all with `instanceof SelfhealError` and tell
 * them apart by `code`, which stays stable across releases (messages may change).
 */
export type SelfhealErrorCode =
  | "INVALID_SETTINGS"
  | "MISSING_MODEL_CONFIG"
  | "SANDBOX_UNAVAILABLE"
  | "THREAD_BUSY"
  | "THREAD_HAS_RUN"
  | "STORE_CONNECTION"
  | "STORE_UNAVAILABLE"
  | "USAGE";

export class SelfhealError extends Error {
  constructor(
    readonly code: SelfhealErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A setting, an input field or an environment variable has a value selfheal cannot use. */
export class InvalidSettingsError extends SelfhealError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("INVALID_SETTINGS", message, options);
  }
}

/** A model is needed and none is injected or configured in the environment. */
export class MissingModelConfigError extends SelfhealError {
  constructor() {
    super(
      "MISSING_MODEL_CONFIG",
      "No model is configured. Set OPENAI_API_KEY for OpenAI, or OPENAI_BASE_URL for any OpenAI-compatible server, " +
        "e.g. Ollama: OPENAI_BASE_URL=http://localhost:11434/v1 SELFHEAL_MODEL=qwen2.5-coder:7b. " +
        "Or try `selfheal demo`, which needs neither.",
    );
  }
}

/** The sandbox that was asked for cannot run programs on this host. */
export class SandboxUnavailableError extends SelfhealError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("SANDBOX_UNAVAILABLE", message, options);
  }
}

/** Another process holds the thread: running it here too would interleave two runs' checkpoints. */
export class ThreadBusyError extends SelfhealError {
  constructor(message: string) {
    super("THREAD_BUSY", message);
  }
}

/**
 * A new input reached a thread that already holds a run. Its state (the status, the attempts, the
 * best program) would carry into the new task, so the thread takes no second task: give the new
 * task a new thread, and continue this run with a resume.
 */
export class ThreadHasRunError extends SelfhealError {
  constructor(message: string) {
    super("THREAD_HAS_RUN", message);
  }
}

/** The run store cannot be opened: PostgreSQL unreachable, or a SQLite path that is not a usable file. */
export class StoreConnectionError extends SelfhealError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("STORE_CONNECTION", message, options);
  }
}

/**
 * The run store went away during a run and did not come back within `storeWaitSeconds`: the run
 * stopped at its last saved checkpoint, and resuming it later goes on from there.
 */
export class StoreUnavailableError extends SelfhealError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("STORE_UNAVAILABLE", message, options);
  }
}

/** A command-line usage error: the CLI exits 2 with one clear line. */
export class UsageError extends SelfhealError {
  constructor(message: string) {
    super("USAGE", message);
  }
}

/** An error's message, or the thrown value itself as text. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
