import PQueueModule from "p-queue";

// p-queue 6 is CommonJS: under NodeNext its default export arrives as the module object.
type PQueueClass = typeof PQueueModule.default;
const PQueue: PQueueClass =
  (PQueueModule as { default?: PQueueClass }).default ?? (PQueueModule as unknown as PQueueClass);

/**
 * Sandbox slots, one pool per thread: the candidates of a round all call their model at once, but
 * at most `sandboxConcurrency` of them run a program at a time. The pool goes when it is idle.
 */
export function sandboxSlots() {
  const pools = new Map<string, InstanceType<typeof PQueue>>();
  return async <T>(key: string, concurrency: number, work: () => Promise<T>): Promise<T> => {
    let pool = pools.get(key);
    if (!pool) {
      pool = new PQueue({ concurrency });
      pools.set(key, pool);
    }
    try {
      return await pool.add(work);
    } finally {
      if (pool.size === 0 && pool.pending === 0) pools.delete(key);
    }
  };
}

export type SandboxSlots = ReturnType<typeof sandboxSlots>;

/** Runs of one thread share a pool; runs without a thread id share one among them. */
export function slotKeyOf(config: { configurable?: Record<string, unknown> }): string {
  const thread = config.configurable?.thread_id;
  return typeof thread === "string" ? thread : "";
}
