import type { RunIndex, RunStore, ThreadHead } from "./run-store.js";

/**
 * The listing's read side of any store, through its checkpointer: every thread with an input
 * checkpoint, and each at its last checkpoint. A thread whose head cannot be read is listed as
 * unread, for the caller to describe through the graph, and the listing goes on.
 */
export function indexOfStore(store: RunStore): RunIndex {
  return {
    location: store.location,
    listRuns: () => store.listRuns(),
    async listHeads() {
      const threadIds = new Set<string>();
      for await (const tuple of store.checkpointer.list({ configurable: {} }, { filter: { step: -1 } })) {
        const threadId = tuple.config.configurable?.thread_id;
        if (typeof threadId === "string") threadIds.add(threadId);
      }
      const heads: ThreadHead[] = [];
      for (const threadId of threadIds) {
        const head = await store.checkpointer.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "" } });
        const interrupted = head?.pendingWrites?.some(([, channel]) => channel === "__interrupt__") ?? false;
        heads.push(
          head
            ? { threadId, values: head.checkpoint.channel_values, createdAt: head.checkpoint.ts, interrupted }
            : { threadId, interrupted, unread: true },
        );
      }
      return heads;
    },
    openStore: async () => store,
    close: () => store.close(),
  };
}
