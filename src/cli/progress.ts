import type { AgentState, AgentUpdate, Usage } from "../graph/state.js";
import type { OutputEvent } from "../nodes/executor.js";

type Write = (text: string) => void;

/**
 * Turns the graph's stream into the lines a person watches on stderr: which step is running,
 * what the program prints, the error that failed it, and the tokens spent so far.
 */
export class ProgressReporter {
  private tokens: number;
  private attempt: number;

  /** A resumed run starts counting from where its checkpoint left off. */
  constructor(
    private readonly write: Write = (text) => process.stderr.write(text),
    from: { attempt: number; tokens: number } = { attempt: 0, tokens: 0 },
  ) {
    this.attempt = from.attempt;
    this.tokens = from.tokens;
  }

  /** Free-form line in the same voice, for the CLI's own messages (thread id, approval, resume hints). */
  note(text: string): void {
    this.line(text);
  }

  taskStarted(name: string): void {
    const label: Record<string, string> = {
      generator: this.attempt === 0 ? "generating a program" : "writing a fresh program (the same error kept coming back)",
      executor: `executing attempt ${this.attempt + 1}`,
      approval: "",
      fixer: "fixing",
      critic: "",
    };
    const text = label[name] ?? `running ${name}`;
    if (text) this.line(text);
  }

  output(event: OutputEvent): void {
    this.write(`    ${event.stream === "stderr" ? "!" : "|"} ${event.line}\n`);
  }

  update(node: string, update: AgentUpdate): void {
    if (Array.isArray(update.usage)) {
      for (const call of update.usage) this.tokens += call.inputTokens + call.outputTokens;
    }
    if (typeof update.attempt === "number") this.attempt = update.attempt;
    for (const objection of Array.isArray(update.objections) ? update.objections : []) {
      this.line(`${node}: ${objection.type}: ${objection.message}`);
    }
    const run = update.lastRun;
    if (run) {
      this.line(run.ran ? `attempt ${this.attempt}: ${run.status} in ${Math.round(run.durationMs)} ms` : `attempt ${this.attempt}: not run (${run.error?.type ?? "blocked"})`);
    }
    for (const note of Array.isArray(update.notes) ? update.notes : []) this.line(`${note.source}: ${note.message}`);
    const critique = update.critique;
    if (critique) {
      this.line(critique.passed ? `attempt ${this.attempt}: passed` : `attempt ${this.attempt}: failed: ${firstLine(critique.summary)}`);
      this.line(`tokens so far: ${this.tokens}`);
    }
    if (update.status && update.status !== "running" && node !== "critic") this.line(`stopped: ${update.status}: ${update.reason ?? ""}`);
  }

  finished(state: AgentState): void {
    this.line(`${state.status} after ${state.attempt} attempt(s); ${formatUsage(state.usage)}`);
  }

  private line(text: string): void {
    this.write(`selfheal: ${text}\n`);
  }
}

const firstLine = (text: string) => text.split("\n")[0] ?? "";

export function formatUsage(usage: Usage): string {
  return `${usage.totalTokens} tokens (${usage.inputTokens} in, ${usage.outputTokens} out) over ${usage.calls} model call(s)`;
}
