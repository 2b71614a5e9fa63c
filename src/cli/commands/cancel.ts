import type { Command } from "commander";
import { EXIT } from "../exit.js";
import { addQueueOptions, type QueueFlags, resolveQueueLocation, withQueue } from "../queue-session.js";
import { addStoreOptions } from "../session.js";
import { summaryOf } from "./catalog.js";

/** `selfheal cancel`: a queued run is never started; a running one stops as on Ctrl-C, checkpoints kept. */
export async function cancelRuns(threadIds: string[], flags: QueueFlags): Promise<number> {
  const location = resolveQueueLocation(flags);
  const cancelled = new Set(await withQueue(location, { supervise: false }, (queue) => queue.cancel(threadIds)));
  for (const threadId of threadIds) {
    if (cancelled.has(threadId)) process.stdout.write(`cancelled ${threadId}\n`);
    else process.stderr.write(`selfheal: thread ${threadId} has no queued or running job\n`);
  }
  return cancelled.size === threadIds.length ? EXIT.passed : EXIT.failed;
}

/** `selfheal cancel`. */
export function registerCancelCommand(program: Command): void {
  const command = program
    .command("cancel")
    .description(summaryOf("cancel"))
    .argument("<thread...>", "thread ids printed by `selfheal submit`");
  addQueueOptions(addStoreOptions(command)).action(async (threadIds: string[], flags: QueueFlags) => {
    process.exitCode = await cancelRuns(threadIds, flags);
  });
}
