import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface, type Interface } from "node:readline/promises";
import { structuredPatch } from "diff";
import type { ApprovalDecision, ApprovalRequest } from "../internal.js";
import type { ApprovalContext, ApprovalHandler } from "./stream-run.js";
import { type Colors, colorsFor, terminalStyle } from "./terminal.js";

export interface PromptIO {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  output: NodeJS.WritableStream;
  /** A shell command; the file to edit is passed as its last argument. */
  editor: string;
  /** Colour the diff and the question; off unless the output is a colour terminal. */
  color?: boolean;
}

/** A person can answer only when both the keyboard and the screen are a terminal. */
export function canAskPerson(): boolean {
  return Boolean(process.stdin.isTTY && process.stderr.isTTY);
}

export function editorCommand(env: NodeJS.ProcessEnv = process.env): string {
  return env.VISUAL || env.EDITOR || "vi";
}

const EXTENSIONS: Record<ApprovalRequest["language"], string> = { python: ".py", javascript: ".js" };

function numbered(code: string): string {
  const lines = code.replace(/\n$/, "").split("\n");
  const width = String(lines.length).length;
  return lines.map((line, index) => `${String(index + 1).padStart(width)} | ${line}`).join("\n");
}

/** A unified diff, as `git diff` shows one: what the fixer (or a person) changed since the attempt before. */
export function formatProgramDiff(
  before: string,
  after: string,
  names: { before: string; after: string },
  colors: Colors,
): string {
  const patch = structuredPatch(names.before, names.after, before, after, undefined, undefined, { context: 3 });
  const lines = [colors.bold(`--- ${names.before}`), colors.bold(`+++ ${names.after}`)];
  for (const hunk of patch.hunks) {
    lines.push(colors.cyan(`@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`));
    for (const line of hunk.lines) {
      if (line.startsWith("+")) lines.push(colors.green(line));
      else if (line.startsWith("-")) lines.push(colors.red(line));
      else if (!line.startsWith("\\")) lines.push(line);
    }
  }
  return lines.join("\n");
}

/** The whole program the first time; after that, what changed since the attempt before. */
function describeProgram(request: ApprovalRequest, previousCode: string | undefined, colors: Colors): string {
  const what = `attempt ${request.attempt} wants to run this ${request.language} program`;
  if (previousCode === undefined) return `${colors.bold(what)}:\n${numbered(request.code)}`;
  if (previousCode === request.code)
    return `${colors.bold(what)}, the same as attempt ${request.attempt - 1}:\n${numbered(request.code)}`;
  const diff = formatProgramDiff(
    previousCode,
    request.code,
    { before: `attempt ${request.attempt - 1}`, after: `attempt ${request.attempt}` },
    colors,
  );
  return `${colors.bold(what)}; the changes since attempt ${request.attempt - 1}:\n${diff}`;
}

/**
 * Opens the program in the person's editor and returns what they saved. The path goes through
 * an environment variable, so an EDITOR with arguments (`code --wait`) and odd temp paths both work.
 */
export function editInEditor(request: ApprovalRequest, editor: string): { code?: string; problem?: string } {
  const dir = mkdtempSync(join(tmpdir(), "selfheal-edit-"));
  const file = join(dir, `attempt-${request.attempt}${EXTENSIONS[request.language]}`);
  try {
    writeFileSync(file, request.code);
    const result = spawnSync(`${editor} "$SELFHEAL_EDIT_FILE"`, {
      shell: true,
      stdio: "inherit",
      env: { ...process.env, SELFHEAL_EDIT_FILE: file },
    });
    if (result.error) return { problem: `could not start the editor (${editor}): ${result.error.message}` };
    if (result.status !== 0)
      return { problem: `the editor (${editor}) exited with code ${result.status}; nothing changed` };
    const code = readFileSync(file, "utf8");
    if (code.trim() === "") return { problem: "the edited program is empty" };
    if (code === request.code) return { problem: "no changes were saved" };
    return { code };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Lines typed (or piped) in answer to questions. readline drops a line that arrives while no
 * question is pending, which piped input does all the time, so lines queue here instead. The
 * interface is closed while the editor owns the terminal and opened again afterwards.
 */
class AnswerReader {
  private rl: Interface | undefined;
  private readonly lines: string[] = [];
  private waiting: ((line: string | undefined) => void) | undefined;
  private ended = false;
  /** Set by Ctrl-C, which ends the input like Ctrl-D but means "stop", not "decide later". */
  interrupted = false;

  constructor(private readonly io: Pick<PromptIO, "input" | "output">) {}

  async ask(question: string): Promise<string | undefined> {
    const rl = this.open();
    rl?.setPrompt(question);
    rl?.prompt();
    const queued = this.lines.shift();
    if (queued !== undefined || this.ended) return queued;
    return new Promise((resolve) => (this.waiting = resolve));
  }

  /**
   * One key, without Enter, on a terminal (the question reads like single keys, and `r` then the
   * reason typed straight on must reach the reason); a line elsewhere, as piped answers are lines.
   * What was typed after the key is left for the next question; an Enter on its own is ignored.
   */
  async askKey(question: string): Promise<string | undefined> {
    const input = this.io.input as NodeJS.ReadStream;
    if (!input.isTTY || typeof input.setRawMode !== "function") return this.ask(question);
    if (this.ended) return undefined;
    this.pause();
    this.io.output.write(question);
    return new Promise((resolve) => {
      const done = (answer: string | undefined) => {
        input.off("data", onData);
        input.setRawMode(false);
        input.pause();
        this.waiting = undefined;
        resolve(answer);
      };
      const onData = (chunk: Buffer | string) => {
        const typed = chunk.toString();
        const key = typed.replace(/^[\r\n]+/, "")[0];
        if (key === undefined) return;
        if (key === "\x03" || key === "\x04") {
          // Ctrl-C stops the run; Ctrl-D leaves it waiting, as the end of the input does.
          this.interrupted = key === "\x03";
          this.ended = true;
          this.io.output.write("\n");
          return done(undefined);
        }
        this.io.output.write(`${/^[\x20-\x7e]$/.test(key) ? key : ""}\n`);
        done(key);
        // Put back once this listener is off: a flowing stream hands it straight back to listeners.
        const rest = typed.slice(typed.indexOf(key) + 1).replace(/^[\r\n]/, "");
        if (rest) input.unshift(Buffer.from(rest));
      };
      // interrupt() (SIGINT from elsewhere) ends the wait as it ends a line's.
      this.waiting = done;
      input.setRawMode(true);
      input.on("data", onData);
      input.resume();
    });
  }

  /** Hands the terminal to another program; what was already typed stays queued. */
  pause(): void {
    const rl = this.rl;
    this.rl = undefined;
    rl?.close();
  }

  private open(): Interface | undefined {
    if (this.rl || this.ended) return this.rl;
    const rl = createInterface({
      input: this.io.input,
      output: this.io.output,
      terminal: Boolean(this.io.input.isTTY),
    });
    rl.on("line", (line) => this.deliver(line));
    // Closed by pause() is not the end of the input; closed by itself (Ctrl-D, end of a pipe) is.
    rl.once("close", () => {
      if (this.rl !== rl) return;
      this.ended = true;
      this.deliver(undefined);
    });
    // In raw mode Ctrl-C reaches readline as a key, not as a signal to the process.
    rl.on("SIGINT", () => this.interrupt());
    this.rl = rl;
    return rl;
  }

  /** Ctrl-C: no more answers; the one awaited, if any, is undefined. */
  interrupt(): void {
    this.interrupted = true;
    this.ended = true;
    this.pause();
    this.deliver(undefined);
  }

  private deliver(line: string | undefined): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    if (waiting) waiting(line);
    else if (line !== undefined) this.lines.push(line);
  }
}

/**
 * Shows the program (or its diff from the attempt before) and asks approve / reject with a
 * reason / edit / decide later. Ctrl-C, at the keyboard or as SIGINT, answers "interrupted".
 */
export async function askForApproval(
  request: ApprovalRequest,
  io: PromptIO,
  context: ApprovalContext = {},
): Promise<ApprovalDecision | "later" | "interrupted"> {
  const colors = colorsFor({ color: Boolean(io.color) });
  const say = (text: string) => io.output.write(`${text}\n`);
  say(`\n${describeProgram(request, context.previousCode, colors)}`);
  const answers = new AnswerReader(io);
  const onAbort = () => answers.interrupt();
  if (context.signal?.aborted) return "interrupted";
  context.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    for (;;) {
      const answer = await answers.askKey(
        colors.bold("approve (a), reject with a reason (r), edit in your editor (e), or decide later (q)? "),
      );
      if (answers.interrupted) return "interrupted";
      // The input ended (Ctrl-D, a closed pipe): nobody is there to decide, so leave the run waiting.
      if (answer === undefined) return "later";
      switch (answer.trim().toLowerCase()) {
        case "a":
        case "approve":
          return { action: "approve" };
        case "r":
        case "reject": {
          for (;;) {
            const reason = (await answers.ask("reason (the fixer gets it like an error): "))?.trim();
            if (answers.interrupted) return "interrupted";
            if (reason === undefined) return "later";
            if (reason) return { action: "reject", reason };
            say("a rejection needs a reason");
          }
        }
        case "e":
        case "edit": {
          answers.pause();
          const edited = editInEditor(request, io.editor);
          if (edited.code !== undefined) return { action: "edit", code: edited.code };
          say(`selfheal: ${edited.problem}`);
          break;
        }
        case "q":
        case "later":
          return "later";
        default:
          say(io.input.isTTY ? "press a, r, e or q" : "answer a, r, e or q");
      }
    }
  } finally {
    context.signal?.removeEventListener("abort", onAbort);
    answers.pause();
  }
}

/** The approval handler for a terminal session: asks the person at the keyboard. */
export function terminalApprover(): ApprovalHandler {
  return (request, context) =>
    askForApproval(
      request,
      {
        input: process.stdin,
        output: process.stderr,
        editor: editorCommand(),
        color: terminalStyle(process.stderr).color,
      },
      context,
    );
}
