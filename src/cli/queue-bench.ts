import { randomUUID } from "node:crypto";
import type { TaskRunner } from "../benchmark/index.js";
import type { Agent, AgentState } from "../internal.js";
import { DEFAULT_DELIVERY, type QueuedRun, type TaskQueue } from "../queue/index.js";
import type { RunStep } from "../report/index.js";
import type { RunStore } from "../store/index.js";

const JOB_POLL_MS = 250;

async function untilJobEnds(queue: TaskQueue, threadId: string): Promise<QueuedRun> {
  for (;;) {
    const job = (await queue.list(threadId)).at(-1);
    if (job && job.state !== "queued" && job.state !== "running") return job;
    await new Promise((resolve) => setTimeout(resolve, JOB_POLL_MS));
  }
}

/**
 * `selfheal bench --queue`: each task becomes a job for whichever worker takes it. When the job
 * ends, the thread's checkpoints (in the shared store) are replayed oldest first: they are the
 * states the run streamed, so the benchmark judges and reports exactly as for a run in this process.
 */
export function queueRunner(store: RunStore, queue: TaskQueue, agent: Agent): TaskRunner {
  return async function* (input, settings) {
    const threadId = `bench-${randomUUID()}`;
    await store.saveRun({ threadId, task: input.task, settings, createdAt: new Date().toISOString() });
    await queue.submit([{ threadId, input }], DEFAULT_DELIVERY);
    const job = await untilJobEnds(queue, threadId);
    if (job.state !== "finished")
      throw new Error(`the job of thread ${threadId} was ${job.state}: ${job.reason ?? ""}`);
    // No node names here (the report shows such steps without them): only the states and times.
    const steps: RunStep[] = [];
    for await (const snapshot of agent.getStateHistory({ configurable: { thread_id: threadId } })) {
      steps.push({
        values: snapshot.values as AgentState,
        ...(snapshot.createdAt ? { createdAt: snapshot.createdAt } : {}),
      });
    }
    yield* steps.reverse();
  };
}
