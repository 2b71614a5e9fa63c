import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  type Checkpoint,
  type CheckpointMetadata,
  type CheckpointTuple,
} from "@langchain/langgraph-checkpoint";
import { DEFAULT_STORE_WAIT_SECONDS } from "../core/settings.js";
import { type OutageTest, type StoreWaits, waitForStore } from "./outage.js";

export interface Patience {
  isOutage: OutageTest;
  /** Where the database is, for messages (no password). */
  where: string;
  waits: StoreWaits;
  /**
   * Called inside the wait before each write for a thread: the store re-takes a thread lease that
   * was lost with its connection, and throws ThreadBusyError if another process took it meanwhile.
   */
  beforeWrite?(threadId: string): Promise<void>;
}

type CheckpointListOptions = Parameters<BaseCheckpointSaver["list"]>[1];
type ChannelVersions = Parameters<BaseCheckpointSaver["put"]>[3];
type PendingWrite = Parameters<BaseCheckpointSaver["putWrites"]>[1][number];

/**
 * A checkpointer that waits for its database: a read or write that fails because the database is
 * away (or gets no answer) is retried with backoff for up to the run's `storeWaitSeconds`, which
 * LangGraph passes in with every call as part of the run's context; past it the run stops with
 * StoreUnavailableError at its last saved checkpoint. Writes are idempotent upserts in both savers
 * (a checkpoint's or a write's own id), so one repeated after an answer was lost changes nothing.
 */
export class PatientCheckpointer extends BaseCheckpointSaver {
  constructor(
    private readonly inner: BaseCheckpointSaver,
    private readonly patience: Patience,
  ) {
    super(inner.serde);
  }

  getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    return this.wait("reading the last checkpoint", config, () => this.inner.getTuple(config), READ_OUTSIDE_A_RUN);
  }

  /** Waits for the first checkpoint only: one that failed later would be listed twice on a retry. */
  async *list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    let iterator: AsyncGenerator<CheckpointTuple> | undefined;
    const first = await this.wait(
      "listing checkpoints",
      config,
      async () => {
        iterator = this.inner.list(config, options);
        return iterator.next();
      },
      READ_OUTSIDE_A_RUN,
    );
    if (first.done || !iterator) return;
    yield first.value;
    yield* iterator;
  }

  put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    return this.wait("saving a checkpoint", config, async () => {
      await this.confirm(config);
      return this.inner.put(config, checkpoint, metadata, newVersions);
    });
  }

  putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    return this.wait("saving a step's writes", config, async () => {
      await this.confirm(config);
      return this.inner.putWrites(config, writes, taskId, taskPath);
    });
  }

  deleteThread(threadId: string): Promise<void> {
    return this.wait("deleting a thread", { configurable: { thread_id: threadId } }, () =>
      this.inner.deleteThread(threadId),
    );
  }

  override getNextVersion(current: number | undefined): number {
    return this.inner.getNextVersion(current);
  }

  private async confirm(config: RunnableConfig): Promise<void> {
    const threadId = threadOf(config);
    if (threadId !== undefined) await this.patience.beforeWrite?.(threadId);
  }

  /**
   * Any other operation of the same store (a run record, a lease), waited for the same way: the
   * store's `patiently` is this.
   */
  readonly patiently = <T>(operation: string, attempt: () => Promise<T>, boundSeconds: number): Promise<T> =>
    this.waitUpTo(operation, attempt, boundSeconds);

  private wait<T>(
    operation: string,
    config: RunnableConfig,
    attempt: () => Promise<T>,
    outsideARun = DEFAULT_STORE_WAIT_SECONDS,
  ): Promise<T> {
    return this.waitUpTo(
      operation,
      attempt,
      boundOf(config, outsideARun),
      threadOf(config),
      (config as { signal?: AbortSignal }).signal,
    );
  }

  private waitUpTo<T>(
    operation: string,
    attempt: () => Promise<T>,
    boundSeconds: number,
    threadId?: string,
    signal?: AbortSignal,
  ): Promise<T> {
    return waitForStore(attempt, {
      operation,
      threadId,
      boundMs: boundSeconds * 1000,
      isOutage: this.patience.isOutage,
      where: this.patience.where,
      report: (event) => this.patience.waits.report(event),
      signal,
    });
  }
}

function threadOf(config: RunnableConfig): string | undefined {
  const threadId = config.configurable?.thread_id;
  return typeof threadId === "string" ? threadId : undefined;
}

/**
 * A read with no run's settings (`getState` for a listing, a report, a history) is someone waiting
 * for an answer: it fails at once, with one line, rather than after minutes. Writes happen only in
 * runs; one whose caller passed no settings waits the default.
 */
const READ_OUTSIDE_A_RUN = 0;

/** The run's own bound, from the context LangGraph hands every checkpointer call in a run; `fallback` without one. */
function boundOf(config: RunnableConfig, fallback: number): number {
  const seconds = (config as { context?: { storeWaitSeconds?: unknown } }).context?.storeWaitSeconds;
  return typeof seconds === "number" && Number.isFinite(seconds) && seconds >= 0 ? seconds : fallback;
}
