import { resolveStoreLocation } from "../../store/index.js";
import { EXIT } from "../exit.js";
import type { QueueFlags } from "../queue-options.js";
import { resolveQueueLocation, withQueue } from "../queue-session.js";
import { UsageError } from "../session.js";

/** `selfheal cancel`: a queued run is never started; a running one stops as on Ctrl-C, checkpoints kept. */
export async function cancelRuns(threadIds: string[], flags: QueueFlags): Promise<number> {
  if (resolveStoreLocation(flags).kind !== "postgres") {
    throw new UsageError(
      "cancel stops runs given to the queue (`selfheal submit`, which needs the PostgreSQL store: --postgres URL or $SELFHEAL_POSTGRES_URL); a run started with `selfheal run` stops with Ctrl-C in its terminal, and `resume` continues it",
    );
  }
  const location = resolveQueueLocation(flags);
  const cancelled = new Set(await withQueue(location, { supervise: false }, (queue) => queue.cancel(threadIds)));
  for (const threadId of threadIds) {
    if (cancelled.has(threadId)) process.stdout.write(`cancelled ${threadId}\n`);
    else process.stderr.write(`selfheal: thread ${threadId} has no queued or running job\n`);
  }
  return cancelled.size === threadIds.length ? EXIT.passed : EXIT.failed;
}
