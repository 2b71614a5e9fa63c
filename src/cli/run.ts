import { writeFile } from "node:fs/promises";
import type { Agent } from "../graph/index.js";
import type { Settings } from "../graph/context.js";
import type { AgentState, RunInput } from "../graph/state.js";
import type { OutputEvent } from "../nodes/executor.js";
import { ProgressReporter } from "./progress.js";

export const EXIT = { passed: 0, failed: 1, usage: 2, awaitingApproval: 3 } as const;

export interface RunOptions {
  json?: boolean;
  out?: string;
  threadId?: string;
  /** Printed first, e.g. that the model is scripted. */
  banner?: string;
}

/** The `--json` result: the fields a script needs to act on the run. */
export function summarizeRun(state: AgentState, threadId?: string) {
  return {
    status: state.status,
    reason: state.reason,
    attempt: state.attempt,
    code: state.status === "passed" ? state.code : state.best?.code ?? state.code,
    errors: state.errors,
    history: state.history,
    usage: state.usage,
    best: state.best,
    ...(threadId ? { threadId } : {}),
  };
}

/** Streams one run with live progress on stderr; returns the process exit code. */
export async function streamRun(agent: Agent, input: RunInput | null, settings: Settings, options: RunOptions = {}): Promise<number> {
  const reporter = new ProgressReporter();
  if (options.banner) process.stderr.write(`${options.banner}\n`);
  let final: AgentState | undefined;
  const stream = await agent.stream(input, {
    context: settings,
    configurable: options.threadId ? { thread_id: options.threadId } : {},
    streamMode: ["updates", "custom", "tasks", "values"],
    recursionLimit: 200,
  });
  for await (const [mode, chunk] of stream as AsyncIterable<[string, unknown]>) {
    if (mode === "custom" && isOutputEvent(chunk)) reporter.output(chunk);
    else if (mode === "tasks" && isTaskStart(chunk)) reporter.taskStarted(chunk.name);
    else if (mode === "updates") {
      for (const [node, update] of Object.entries(chunk as Record<string, unknown>)) {
        if (update && typeof update === "object") reporter.update(node, update);
      }
    } else if (mode === "values") final = chunk as AgentState;
  }
  if (!final) throw new Error("the run produced no state");
  reporter.finished(final);

  const summary = summarizeRun(final, options.threadId);
  const text = options.json ? `${JSON.stringify(summary, null, 2)}\n` : summary.code;
  if (options.out) await writeFile(options.out, text);
  else process.stdout.write(text);
  return final.status === "passed" ? EXIT.passed : EXIT.failed;
}

function isOutputEvent(chunk: unknown): chunk is OutputEvent {
  return typeof chunk === "object" && chunk !== null && (chunk as OutputEvent).kind === "output";
}

function isTaskStart(chunk: unknown): chunk is { name: string; input: unknown } {
  return typeof chunk === "object" && chunk !== null && "name" in chunk && "input" in chunk && !("result" in chunk);
}
