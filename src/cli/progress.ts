import ora, { type Ora } from "ora";
import {
  type AgentState,
  type AgentUpdate,
  describeTestIsolation,
  type OutputEvent,
  type TestIsolation,
  type Usage,
} from "../internal.js";
import { missingModuleAdvice } from "./python-choice.js";
import { type Colors, colorsFor, type TerminalStyle, terminalStyle } from "./terminal.js";

type Output = Pick<NodeJS.WritableStream, "write"> & { isTTY?: boolean; columns?: number };

export interface ReporterOptions {
  /** Where progress goes; stderr by default, so stdout stays the result. */
  stream?: Output;
  /** Colour and spinner; by default decided from `stream` and the environment. */
  style?: TerminalStyle;
  /** A resumed run starts counting from where its checkpoint left off. */
  from?: { attempt: number; tokens: number };
  /** In plain mode, a line every this many ms while one step goes on (a model that thinks for minutes is not silent). */
  heartbeatMs?: number;
}

/** What is running now, for the spinner and the heartbeat. */
interface Activity {
  text: string;
  startedAt: number;
}

/**
 * Turns the graph's stream into what a person watches on stderr: on a terminal, a spinner naming
 * the running step with its elapsed time; then one summary line per attempt, the program's own
 * output indented as it streams, notes and objections from other nodes, and a final status line.
 * Off a terminal (or with NO_COLOR) the same lines come plain, with no spinner and no escapes.
 */
export class ProgressReporter {
  private tokens: number;
  private attempt: number;
  private readonly stream: Output;
  private readonly style: TerminalStyle;
  private readonly colors: Colors;
  private readonly heartbeatMs: number;
  private activity: Activity | undefined;
  private spinner: Ora | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  /** The latest execution, until its verdict arrives and is summarised. */
  private lastRun: { ran: boolean; durationMs: number } | undefined;
  /** How the latest run that had tests judged them; the last attempt may not have run (an objection). */
  private testIsolation: TestIsolation | undefined;
  /** Modules a missing-module hint was shown for. */
  private readonly hinted = new Set<string>();
  /** Stderr lines of candidates running at once, held until that candidate is quiet (see `output`). */
  private readonly held = new Map<number, { lines: OutputEvent[]; timer: NodeJS.Timeout }>();

  constructor(options: ReporterOptions = {}) {
    this.stream = options.stream ?? process.stderr;
    this.style = options.style ?? terminalStyle(this.stream);
    this.colors = colorsFor(this.style);
    this.attempt = options.from?.attempt ?? 0;
    this.tokens = options.from?.tokens ?? 0;
    this.heartbeatMs = options.heartbeatMs ?? 30_000;
  }

  /** The CLI's own messages (thread id, model, approval, resume hints), dim beside the results. */
  note(text: string): void {
    this.line(this.colors.dim(text));
  }

  /** A line that must stand out, e.g. a warning. */
  warn(text: string): void {
    this.line(this.colors.yellow(text));
  }

  taskStarted(name: string): void {
    const next = this.attempt + 1;
    switch (name) {
      case "generator":
        if (this.attempt > 0)
          this.line(this.colors.yellow(`↻ attempt ${next}: writing a fresh program (the same error kept coming back)`));
        this.begin(`attempt ${next}: writing a program`);
        return;
      case "fixer":
        this.begin(`attempt ${next}: fixing`);
        return;
      case "executor":
        this.begin(`attempt ${next}: running`);
        return;
      case "critic":
        this.begin(`attempt ${this.attempt}: judging`);
        return;
      case "approval":
        // The prompt owns the terminal from here.
        this.stop();
        return;
      default:
        this.begin(`attempt ${next}: ${name}`);
        return;
    }
  }

  /**
   * A line the program printed. Candidates of a round run at once, so a candidate's stderr lines
   * are held until it prints to stdout, is quiet for a moment, or a step ends: its traceback then
   * comes as one block, not cut by the lines of the others.
   */
  output(event: OutputEvent): void {
    const candidate = event.candidate;
    if (candidate === undefined || event.stream === "stdout") {
      if (candidate !== undefined) this.release(candidate);
      this.writeOutput(event);
      return;
    }
    const held = this.held.get(candidate);
    clearTimeout(held?.timer);
    this.held.set(candidate, {
      lines: [...(held?.lines ?? []), event],
      timer: setTimeout(() => this.release(candidate), HOLD_QUIET_MS).unref(),
    });
  }

  private release(candidate: number): void {
    const held = this.held.get(candidate);
    if (!held) return;
    this.held.delete(candidate);
    clearTimeout(held.timer);
    for (const line of held.lines) this.writeOutput(line);
  }

  private releaseAll(): void {
    for (const candidate of [...this.held.keys()].sort((a, b) => a - b)) this.release(candidate);
  }

  private writeOutput(event: OutputEvent): void {
    const gutter = event.stream === "stderr" ? this.colors.red("!") : this.colors.dim("│");
    // Candidates of a round print at the same time: each line says whose it is.
    const who = event.candidate === undefined ? "" : `${this.colors.dim(`#${event.candidate + 1}`)} `;
    this.write(`    ${gutter} ${who}${event.line}\n`);
  }

  update(node: string, update: AgentUpdate): void {
    this.releaseAll();
    if (Array.isArray(update.usage)) {
      for (const call of update.usage) this.tokens += call.inputTokens + call.outputTokens;
    }
    if (typeof update.attempt === "number") this.attempt = update.attempt;
    if (update.lastRun) this.lastRun = { ran: update.lastRun.ran ?? true, durationMs: update.lastRun.durationMs };
    if (update.lastRun?.testIsolation) this.testIsolation = update.lastRun.testIsolation;
    for (const objection of Array.isArray(update.objections) ? update.objections : []) {
      this.line(`  ${this.colors.yellow("!")} ${this.colors.dim(`${node}:`)} ${objection.type}: ${objection.message}`);
    }
    for (const note of Array.isArray(update.notes) ? update.notes : []) {
      this.line(`  ${this.colors.dim(`· ${note.source}:`)} ${note.message}`);
    }
    if (update.critique) this.attemptEnded(update.critique, reviewIn(update));
    if (update.critique && !update.critique.passed) this.hintMissingModule(update.critique.summary);
  }

  /**
   * A program that failed to import a module the Python lacks: the fixer is told to do without it,
   * but the person can do better, once per module.
   */
  private hintMissingModule(summary: string): void {
    const module = missingModuleIn(summary);
    if (!module || this.hinted.has(module)) return;
    this.hinted.add(module);
    this.line(
      `  ${this.colors.yellow("hint:")} ${module} is not installed for the Python that runs programs: ${missingModuleAdvice([module])}`,
    );
  }

  /** The one line an attempt ends in: verdict, what failed it, time and tokens so far. */
  private attemptEnded(critique: NonNullable<AgentState["critique"]>, review: Review | undefined): void {
    this.stop();
    const { green, red, bold, dim } = this.colors;
    const run = this.lastRun;
    const timing = run === undefined ? [] : run.ran ? [`${Math.round(run.durationMs)} ms`] : ["not run"];
    const facts = dim(`(${[...timing, `${this.tokens} tokens so far`].join(", ")})`);
    const verdict = critique.passed
      ? `${green("✓")} ${bold(`attempt ${this.attempt}`)}  passed${review === "approved" ? ", approved by the LLM review" : ""}`
      : `${red("✗")} ${bold(`attempt ${this.attempt}`)}  ${review === "rejected" ? `rejected by the LLM review: ${firstLine(critique.summary).replace(/^Review:\s*/, "")}` : firstLine(critique.summary)}`;
    this.line(`${verdict}  ${facts}`);
    this.lastRun = undefined;
  }

  /** The run's last line: its status, its tokens and, when it had tests, which way they were judged. */
  finished(state: AgentState): void {
    this.stop();
    const { green, red, bold, dim } = this.colors;
    const attempts = `${state.attempt} attempt${state.attempt === 1 ? "" : "s"}`;
    const isolation = state.lastRun?.testIsolation ?? this.testIsolation;
    const judged = isolation ? `; ${describeTestIsolation(isolation)}` : "";
    const usage = dim(formatUsage(state.usage) + judged);
    if (state.status === "passed") {
      this.line(`${green("✓")} ${bold(green(`passed after ${attempts}`))}  ${usage}`);
    } else {
      const reason = readableReason(state.reason);
      this.line(
        `${red("✗")} ${bold(red(`${state.status} after ${attempts}`))}${reason ? `: ${reason}` : ""}  ${usage}`,
      );
    }
    // Agreement among candidates is the confidence a run without tests can show; a round before
    // the last one no longer speaks for the program the run ended with.
    if (state.candidateChoice && state.candidateChoice.round === state.attempt)
      this.note(`candidates: ${state.candidateChoice.agreement}`);
  }

  /** A dim rule over the program that goes to stdout, so it stands apart from the progress. */
  heading(text: string): void {
    this.line(this.colors.dim(`── ${text} ──`));
  }

  /** Ends the spinner; call before anything else takes the terminal (a prompt, an editor, the result). */
  stop(): void {
    this.releaseAll();
    this.activity = undefined;
    this.spinner?.stop();
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }

  private begin(text: string): void {
    this.activity = { text, startedAt: Date.now() };
    if (this.style.live) {
      this.spinner ??= ora({
        stream: this.stream as NodeJS.WritableStream,
        isEnabled: true,
        // Left on, ora would take stdin in raw mode, and the approval prompt needs it.
        discardStdin: false,
        color: this.style.color ? "cyan" : false,
        suffixText: () =>
          this.activity ? this.colors.dim(`(${formatElapsed(Date.now() - this.activity.startedAt)})`) : "",
      });
      this.spinner.text = text;
      if (!this.spinner.isSpinning) this.spinner.start();
      return;
    }
    this.heartbeat ??= setInterval(() => {
      if (this.activity)
        this.line(this.colors.dim(`… ${this.activity.text} (${formatElapsed(Date.now() - this.activity.startedAt)})`));
    }, this.heartbeatMs).unref();
  }

  private line(text: string): void {
    this.write(`${text}\n`);
  }

  /** Lines never land on top of the spinner: it is cleared first and drawn again below them. */
  private write(text: string): void {
    const spinning = this.spinner?.isSpinning ?? false;
    if (spinning) this.spinner?.clear();
    this.stream.write(text);
    if (spinning) this.spinner?.render();
  }
}

/** How long a candidate's stderr is held after its last line: a traceback is written in one go. */
const HOLD_QUIET_MS = 150;

const firstLine = (text: string) => text.split("\n")[0] ?? "";

/** The top-level Python module an attempt failed to import, from the critic's summary of it. */
export function missingModuleIn(summary: string): string | undefined {
  const match =
    /PackageNotAvailable: '([\w.]+)' is not available here/.exec(summary) ?? /No module named '([\w.]+)'/.exec(summary);
  return match?.[1]?.split(".")[0];
}

type Review = "approved" | "rejected";

/**
 * What the critic model's review concluded, when the critic's update says one ran: it booked a
 * call of its own (a review runs only for a clean run), and its outcome is `ReviewRejected` when
 * the reviewer said no.
 */
function reviewIn(update: AgentUpdate): Review | undefined {
  const calls = Array.isArray(update.usage) ? update.usage : [];
  if (!calls.some((call) => call.node === "critic")) return undefined;
  const entries = Array.isArray(update.history) ? update.history : [];
  return entries.some((entry) => entry.outcome === "ReviewRejected") ? "rejected" : "approved";
}

/** The stop reason for a person: the error it names, without the fingerprint scripts use. */
export function readableReason(reason: string | undefined): string {
  return (reason ?? "").replace(/\s*\(fingerprint [0-9a-f]+\)/g, "").trim();
}

export function formatElapsed(ms: number): string {
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  return `${Math.floor(seconds / 60)} min ${String(Math.floor(seconds % 60)).padStart(2, "0")} s`;
}

export function formatUsage(usage: Usage): string {
  return `${usage.totalTokens} tokens (${usage.inputTokens} in, ${usage.outputTokens} out), ${usage.calls} model call${usage.calls === 1 ? "" : "s"}`;
}
