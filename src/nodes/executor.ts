import { type Execution, LIVE_LINE_CHARS, LIVE_TAIL_LINES, type OutputLine, objectionsFor } from "../core/state.js";
import { assembleProgram, locateFailure } from "../tools/assemble.js";
import { runWithPackages } from "./install-packages.js";
import type { AgentNode, NodeDeps } from "./types.js";

/** Custom stream event: one line the program printed, sent while it runs. */
export interface OutputEvent {
  kind: "output";
  attempt: number;
  stream: "stdout" | "stderr";
  line: string;
}

/** Appends `item`, dropping the oldest once `lines` holds `limit`. */
function keepLast<Item>(lines: Item[], item: Item, limit: number): void {
  lines.push(item);
  if (lines.length > limit) lines.shift();
}

function notRun(type: string, message: string): Execution {
  return {
    status: "error",
    exitCode: null,
    signal: null,
    stdout: "",
    stderr: "",
    truncated: false,
    durationMs: 0,
    error: { type, message, line: null, traceback: "" },
    ran: false,
    failedInTests: false,
    progress: null,
  };
}

/**
 * Runs the program, then the acceptance tests, in the sandbox; every run counts as an attempt, even
 * one an objection kept from running. A rerun after installing an allowed package is not one.
 */
export function createExecutorNode(deps: NodeDeps): AgentNode {
  return async (state, runtime) => {
    const settings = runtime.context;
    const attempt = state.attempt + 1;
    const [objection] = objectionsFor(state, attempt);
    if (objection) return { attempt, lastRun: notRun(objection.type, objection.message) };

    const program = assembleProgram(state.code, state.tests, state.language);
    const sandbox = deps.getSandbox(settings.sandbox);
    const liveTail: OutputLine[] = [];
    const { result, installed, notes } = await runWithPackages(
      sandbox,
      { language: state.language, code: program.source, timeoutMs: settings.timeoutMs },
      {
        state,
        settings,
        attempt,
        hooks: {
          onOutput: (stream, line) => {
            keepLast(liveTail, { stream, line: line.slice(0, LIVE_LINE_CHARS) }, LIVE_TAIL_LINES);
            runtime.writer?.({ kind: "output", attempt, stream, line } satisfies OutputEvent);
          },
        },
      },
    );
    const lastRun: Execution = { ...result, liveTail, ran: true, ...locateFailure(result.error?.line, program) };
    if (installed.length > 0) lastRun.installed = installed;
    return { attempt, lastRun, notes };
  };
}
