import { type Command, Option } from "commander";
import { createSandbox, describeModelEndpoint, type SandboxKind, type Settings, UsageError } from "../index.js";
import {
  describeLocation,
  openRunStore,
  type RunStore,
  resolveStoreLocation,
  type StoreLocation,
  storeExists,
  ThreadBusyError,
  type ThreadLease,
} from "../store/index.js";
import { EXIT } from "./exit.js";
import { cliCommand, shellWord } from "./invocation.js";
import { describeModelCalls, type ModelCallFlags } from "./options.js";

/** Where the CLI keeps runs; shared by every command that reads or writes them. */
export interface StoreFlags {
  db?: string;
  postgres?: string;
}

export function addStoreOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        "--db <path>",
        "SQLite file for checkpoints (default $SELFHEAL_DB, or .selfheal/checkpoints.db in the nearest folder up that has .selfheal/)",
      ).conflicts("postgres"),
    )
    .option("--postgres <url>", "store checkpoints in PostgreSQL, shared by many workers (or $SELFHEAL_POSTGRES_URL)");
}

export { UsageError };

/** Opens the store the flags and environment name, runs `use`, and always closes it. */
export async function withStore<T>(flags: StoreFlags, use: (store: RunStore) => Promise<T>): Promise<T> {
  const store = await openRunStore(resolveStoreLocation(flags));
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}

/**
 * For commands that only read: opens the store only if it exists, so looking
 * creates no database or `.selfheal/`; otherwise answers with `absent(location)`.
 */
export async function withExistingStore<T>(
  flags: StoreFlags,
  use: (store: RunStore) => Promise<T>,
  absent: (location: StoreLocation) => T,
): Promise<T> {
  const location = resolveStoreLocation(flags);
  return storeExists(location) ? withStore(flags, use) : absent(location);
}

export function noSuchRunError(threadId: string, location: StoreLocation): UsageError {
  return new UsageError(`no run with thread id ${threadId} in ${describeLocation(location)}`);
}

/** For commands about one existing thread (`history`, `resume`): with no store there is no such thread, and none is created. */
export function withThreadStore<T>(
  flags: StoreFlags,
  threadId: string,
  use: (store: RunStore) => Promise<T>,
): Promise<T> {
  return withExistingStore(flags, use, (location) => {
    throw noSuchRunError(threadId, location);
  });
}

/** Runs `use` while this process holds the thread, so two workers never advance one run at once. */
export async function withThreadLease<T>(store: RunStore, threadId: string, use: () => Promise<T>): Promise<T> {
  let lease: ThreadLease;
  try {
    lease = await store.lease(threadId);
  } catch (error) {
    if (error instanceof ThreadBusyError) throw new UsageError(`${error.message}; try again when it stops`);
    throw error;
  }
  try {
    return await use();
  } finally {
    await lease.release();
  }
}

export async function threadExists(store: RunStore, threadId: string): Promise<boolean> {
  if (await store.getRun(threadId)) return true;
  return (
    (await store.checkpointer.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "" } })) !== undefined
  );
}

/**
 * The command that continues a thread, as the user can type it where they are. A store chosen by
 * flag is repeated (a PostgreSQL URL as a placeholder: it may hold a password); one chosen by
 * environment is found again the same way.
 */
export function resumeCommandFor(threadId: string, flags: StoreFlags): string {
  const store = flags.postgres ? " --postgres URL" : flags.db ? ` --db ${shellWord(flags.db)}` : "";
  return `${cliCommand()} resume ${threadId}${store}`;
}

/**
 * Ctrl-C stops the run between steps instead of killing the process mid-write; a second Ctrl-C
 * exits at once (130), for a step that does not stop. The listener stays on (`on`, not `once`)
 * until disposed: signal-exit, which ora loads on a terminal, re-raises SIGINT and so kills the
 * process whenever it finds no listener but its own, as it would right after a `once` fired.
 */
export function abortOnCtrlC(): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const onSigint = () => {
    if (controller.signal.aborted) process.exit(EXIT.stopped);
    controller.abort();
  };
  process.on("SIGINT", onSigint);
  return { signal: controller.signal, dispose: () => process.off("SIGINT", onSigint) };
}

/**
 * Which model a run talks to and where, as the first line of its progress: a run that hangs
 * or fails on the wrong server is then obvious at a glance. Credentials in the URL are dropped.
 */
export function describeModel(
  settings: Pick<Settings, "model" | "fixerModel" | "criticModel">,
  options: { scripted: boolean },
  env: NodeJS.ProcessEnv = process.env,
): string {
  if (options.scripted) return `model ${settings.model} (scripted, no API key)`;
  const others = [
    settings.fixerModel && settings.fixerModel !== settings.model ? `fixer ${settings.fixerModel}` : "",
    settings.criticModel && settings.criticModel !== settings.model ? `critic ${settings.criticModel}` : "",
  ].filter(Boolean);
  return `model ${describeModelEndpoint(`${settings.model}${others.length ? ` (${others.join(", ")})` : ""}`, env)}`;
}

const LIMITS = ["memory", "processes", "cpu", "disk", "syscalls"] as const;

/**
 * The progress line that says which sandbox runs the programs (the one `auto` picked, too) and how
 * far its limits hold; `selfheal doctor` shows by what.
 */
export async function describeSandboxChoice(kind: SandboxKind): Promise<string> {
  const sandbox = createSandbox({ kind, prewarm: false });
  try {
    const isolation = sandbox.describe();
    const scoped = (scope: "run" | "process" | "none") => LIMITS.filter((name) => isolation[name].scope === scope);
    const [whole, perProcess, none] = [scoped("run"), scoped("process"), scoped("none")];
    const held = [
      whole.length > 0 ? `${whole.join(", ")} limited for the whole run` : "",
      perProcess.length > 0 ? `${perProcess.join(", ")} per process` : "",
      none.length > 0 ? `nothing limits ${none.join(", ")}` : "",
    ].filter(Boolean);
    return `sandbox ${isolation.kind}${kind === "auto" ? " (picked by auto)" : ""}: ${held.join("; ")}`;
  } finally {
    await sandbox.close();
  }
}

/** The progress lines that say where a run's model answers come from: the model and its server, or a recording. */
export function describeModelSource(
  settings: Pick<Settings, "model" | "fixerModel" | "criticModel">,
  flags: ModelCallFlags,
  options: { scripted: boolean },
): string[] {
  const calls = describeModelCalls(flags);
  if (flags.replay) return [calls!];
  return [describeModel(settings, options), ...(calls ? [calls] : [])];
}

/**
 * Closes sandboxes. Their idle interpreters are unreferenced, so while close() waits for them to
 * exit nothing else may hold the event loop open; without this timer Node can exit mid-close and
 * drop the exit code.
 */
export async function closeSandboxes(sandboxes: Iterable<{ close(): Promise<void> }>): Promise<void> {
  const keepAlive = setInterval(() => undefined, 1_000);
  try {
    await Promise.all([...sandboxes].map((sandbox) => sandbox.close()));
  } finally {
    clearInterval(keepAlive);
  }
}
