import { UsageError } from "../settings.js";
import {
  describeLocation,
  withThreadLease as leased,
  openRunStore,
  type RunStore,
  resolveStoreLocation,
  type StoreLocation,
  storeExists,
  ThreadBusyError,
} from "../store/index.js";
import { EXIT } from "./exit.js";
import { cliCommand, shellWord } from "./invocation.js";

import type { StoreFlags } from "./store-options.js";

export { addStoreOptions, type StoreFlags } from "./store-options.js";

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

/** Runs `use` while this process holds the thread; another live holder is a usage error, one line. */
export async function withThreadLease<T>(store: RunStore, threadId: string, use: () => Promise<T>): Promise<T> {
  try {
    return await leased(store, threadId, use);
  } catch (error) {
    if (error instanceof ThreadBusyError) throw new UsageError(`${error.message}; try again when it stops`);
    throw error;
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
