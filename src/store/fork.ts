import type { BaseCheckpointSaver } from "@langchain/langgraph";
import { InvalidSettingsError } from "../core/errors.js";

/**
 * Time travel into a new thread: copies one checkpoint, with every channel's value, as the first
 * checkpoint of `targetThreadId`. Running that thread continues from there while the source
 * thread keeps its history and its head untouched. Pending writes are not copied, so the step
 * that was pending at that checkpoint runs afresh (an approval is asked again).
 */
export async function forkCheckpoint(
  checkpointer: BaseCheckpointSaver,
  source: { threadId: string; checkpointId: string },
  targetThreadId: string,
): Promise<void> {
  const tuple = await checkpointer.getTuple({
    configurable: { thread_id: source.threadId, checkpoint_ns: "", checkpoint_id: source.checkpointId },
  });
  if (!tuple) throw new InvalidSettingsError(`thread ${source.threadId} has no checkpoint ${source.checkpointId}`);
  const metadata = { ...(tuple.metadata ?? { step: -1, parents: {} }), source: "fork" as const };
  await checkpointer.put(
    { configurable: { thread_id: targetThreadId, checkpoint_ns: "" } },
    tuple.checkpoint,
    metadata,
    // Every channel counts as new, so a saver that stores values per version (PostgreSQL) writes them all.
    tuple.checkpoint.channel_versions,
  );
}
