import { Option, type Command } from "commander";
import { UsageError } from "../errors.js";
import type { Settings } from "../graph/context.js";
import { openRunStore, resolveStoreLocation, ThreadBusyError, type RunStore } from "../store.js";

/** Where the CLI keeps runs; shared by every command that reads or writes them. */
export interface StoreFlags {
  db?: string;
  postgres?: string;
}

export function addStoreOptions(command: Command): Command {
  return command
    .addOption(new Option("--db <path>", "SQLite file for checkpoints (default .selfheal/checkpoints.db, or $SELFHEAL_DB)").conflicts("postgres"))
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

/** Runs `use` while this process holds the thread, so two workers never advance one run at once. */
export async function withThreadLease<T>(store: RunStore, threadId: string, use: () => Promise<T>): Promise<T> {
  let lease;
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
  return (await store.checkpointer.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "" } })) !== undefined;
}

/**
 * The command that continues a thread. A store chosen by flag is repeated (a PostgreSQL URL as a
 * placeholder: it may hold a password); one chosen by environment is found again the same way.
 */
export function resumeCommandFor(threadId: string, flags: StoreFlags): string {
  const store = flags.postgres ? " --postgres URL" : flags.db ? ` --db ${JSON.stringify(flags.db)}` : "";
  return `selfheal resume ${threadId}${store}`;
}

/** Ctrl-C stops the run between steps instead of killing the process mid-write. */
export function abortOnCtrlC(): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const onSigint = () => controller.abort();
  process.once("SIGINT", onSigint);
  return { signal: controller.signal, dispose: () => process.off("SIGINT", onSigint) };
}

/** The default endpoint of the OpenAI client when OPENAI_BASE_URL is not set. */
const OPENAI_API_URL = "https://api.openai.com/v1";

/**
 * Which model a run talks to and where, as the first line of its progress: a run that hangs
 * or fails on the wrong server is then obvious at a glance. Credentials in the URL are dropped.
 */
export function describeModel(settings: Pick<Settings, "model" | "fixerModel" | "criticModel">, options: { scripted: boolean }, env: NodeJS.ProcessEnv = process.env): string {
  if (options.scripted) return `model ${settings.model} (scripted, no API key)`;
  const others = [
    settings.fixerModel && settings.fixerModel !== settings.model ? `fixer ${settings.fixerModel}` : "",
    settings.criticModel && settings.criticModel !== settings.model ? `critic ${settings.criticModel}` : "",
  ].filter(Boolean);
  return `model ${settings.model}${others.length ? ` (${others.join(", ")})` : ""} at ${withoutCredentials(env.OPENAI_BASE_URL || OPENAI_API_URL)}`;
}

function withoutCredentials(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = "";
    parsed.password = "";
    return parsed.href.replace(/\/$/, "");
  } catch {
    return url;
  }
}
