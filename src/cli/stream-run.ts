import { closeSync, existsSync, openSync, statSync, unlinkSync } from "node:fs";
import { copyFile, mkdir, writeFile } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { Command } from "@langchain/langgraph";
import {
  type Agent,
  type AgentState,
  type ApprovalDecision,
  type ApprovalRequest,
  ARTIFACTS_FOLDER,
  driveRun,
  type RunStart,
  type RunStop,
  type Settings,
  StoreUnavailableError,
  UsageError,
} from "../internal.js";
import { describeStoreWait, type StoreWaitListener } from "../store/index.js";
import { EXIT } from "./exit.js";
import { ProgressReporter } from "./progress.js";

export { EXIT } from "./exit.js";

/** What a handler may show or watch besides the request itself. */
export interface ApprovalContext {
  /** The program of the attempt before, so a person can read what changed; absent for the first. */
  previousCode?: string;
  /** Aborted on Ctrl-C (SIGINT from outside the prompt). */
  signal?: AbortSignal;
}

/**
 * Answers one approval request; "later" leaves the run waiting in its checkpoint (exit 3),
 * "interrupted" is Ctrl-C at the prompt (exit 130). Either way the run can be resumed.
 */
export type ApprovalHandler = (
  request: ApprovalRequest,
  context: ApprovalContext,
) => Promise<ApprovalDecision | "later" | "interrupted">;

export type { RunStart };

export interface RunOptions {
  json?: boolean;
  out?: string;
  /** The thread to run in; needs an agent with a checkpointer. */
  threadId?: string;
  /** The command that continues this thread, shown when the run stops before it ends. */
  resumeCommand?: string;
  /** The folder a replayed run's model calls come from: a model error is then a miss, not a server down. */
  replayedFrom?: string;
  /** Decides approval requests; without one the run stops awaiting approval (exit 3). */
  approve?: ApprovalHandler;
  /** The state a resumed run starts from, so progress counts on from its attempts and tokens. */
  from?: Pick<AgentState, "attempt" | "usage">;
  /** More fields for the `--json` result, e.g. which checkpoint a fork came from. */
  extraSummary?: Record<string, unknown>;
  /** Aborted on Ctrl-C: the run stops, its checkpoints stay. */
  signal?: AbortSignal;
  /** Folder to copy the kept artifacts into once the run ends (`--artifacts`). */
  artifactsTo?: string;
  /** The run store's `onWait`: the progress says when the run waits for its database, and when it is back. */
  watchStore?: (listener: StoreWaitListener) => () => void;
}

/** The `--json` result: the fields a script needs to act on the run. */
export function summarizeRun(state: AgentState, threadId?: string) {
  return {
    status: state.status,
    reason: state.reason,
    attempt: state.attempt,
    code: state.status === "passed" ? state.code : (state.best?.code ?? state.code),
    errors: state.errors,
    history: state.history,
    usage: state.usage,
    best: state.best,
    notes: state.notes,
    artifacts: state.artifacts,
    ...(state.candidateChoice ? { candidates: state.candidateChoice } : {}),
    ...(threadId ? { threadId } : {}),
  };
}

async function streamOnce(
  agent: Agent,
  start: RunStart,
  settings: Settings,
  options: RunOptions,
  reporter: ProgressReporter,
): Promise<RunStop> {
  const runOptions = {
    context: settings,
    threadId: options.threadId,
    signal: options.signal,
    output: true,
    tasks: true,
  };
  return driveRun(agent, start, runOptions, (event) => {
    if (event.kind === "output") reporter.output(event.event);
    else if (event.kind === "started") reporter.taskStarted(event.node);
    else if (event.kind === "updated") reporter.update(event.node, event.update);
  });
}

function describeDecision(decision: ApprovalDecision): string {
  switch (decision.action) {
    case "approve":
      return "approved: running it";
    case "reject":
      return `rejected: ${decision.reason}`;
    case "edit":
      return "edited: running the edited program";
  }
}

/**
 * Throws a UsageError unless `out` can be written. Checked before the run starts, because the
 * result is written only when the run ends, and a path that fails then loses it. The check opens
 * the file for writing (and removes it again if it was new), since permission bits say nothing
 * to root, and /proc or /sys refuse files whatever the bits say.
 */
export function checkOutputFile(out: string, flag = "--out"): void {
  const problem = outputFileProblem(resolve(out));
  if (problem) throw new UsageError(`${flag} ${out}: ${problem}`);
}

/** Throws a UsageError unless `dir` is a folder or can become one; checked before the run starts. */
export function checkArtifactsDir(dir: string): void {
  const path = resolve(dir);
  if (existsSync(path)) {
    if (!statSync(path).isDirectory()) throw new UsageError(`--artifacts ${dir}: it is a file; give a folder`);
  } else if (!existsSync(dirname(path))) {
    throw new UsageError(`--artifacts ${dir}: the directory ${dirname(path)} does not exist; create it first`);
  }
}

/** Copies the kept artifacts to `dir`, named as under out/ (`out/chart.png` becomes `dir/chart.png`). */
async function copyArtifacts(state: AgentState, dir: string, reporter: ProgressReporter): Promise<void> {
  const kept = state.artifacts;
  if (!kept?.folder || kept.files.length === 0) {
    reporter.note(`--artifacts: the run kept no artifacts to copy into ${dir}`);
    return;
  }
  for (const file of kept.files) {
    const target = join(dir, relative(ARTIFACTS_FOLDER, file.name));
    await mkdir(dirname(target), { recursive: true });
    await copyFile(join(kept.folder, file.name), target);
  }
  reporter.note(`copied ${kept.files.length} artifact(s) of attempt ${kept.attempt} into ${dir}`);
}

function outputFileProblem(path: string): string | null {
  try {
    if (statSync(path).isDirectory()) return "it is a directory; give a file path";
    closeSync(openSync(path, "r+"));
    return null;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") return explainPathError(error, path);
  }
  const directory = dirname(path);
  if (!existsSync(directory)) return `the directory ${directory} does not exist; create it first`;
  try {
    closeSync(openSync(path, "wx"));
    unlinkSync(path);
    return null;
  } catch (error) {
    return explainPathError(error, directory);
  }
}

function explainPathError(error: unknown, path: string): string {
  const { code, message } = error as NodeJS.ErrnoException;
  if (code === "ENOTDIR") return `a part of ${path} is a file, not a directory`;
  if (code === "EROFS") return `${path} is on a read-only file system`;
  if (code === "EACCES" || code === "EPERM" || code === "ENOENT") return `cannot create or write files in ${path}`;
  return message;
}

/**
 * The result goes to `--out` or to stdout, and stdout carries nothing else so pipes keep
 * working; on a terminal a heading on stderr sets the program apart from the progress above it.
 */
async function emit(text: string, options: RunOptions, reporter: ProgressReporter, heading: string): Promise<void> {
  reporter.stop();
  if (options.out) {
    await writeFile(options.out, text);
    reporter.note(`wrote ${options.json ? "the JSON result" : "the program"} to ${options.out}`);
    return;
  }
  if (!options.json && text !== "" && process.stdout.isTTY) reporter.heading(heading);
  process.stdout.write(text);
}

/**
 * The program the attempt before this one ran, read back from the checkpoints (so a resumed
 * run has it too): the oldest checkpoint at that attempt count is the one its executor wrote.
 */
export async function previousProgram(
  agent: Agent,
  threadId: string | undefined,
  attempt: number,
): Promise<string | undefined> {
  if (!threadId || attempt <= 1) return undefined;
  let code: string | undefined;
  for await (const snapshot of agent.getStateHistory({ configurable: { thread_id: threadId } })) {
    const values: Partial<AgentState> = snapshot.values;
    if (values.attempt === attempt - 1) code = values.code;
    else if ((values.attempt ?? 0) < attempt - 1) break;
  }
  return code || undefined;
}

function interrupted(options: RunOptions, reporter: ProgressReporter): number {
  reporter.stop();
  reporter.note(
    `stopped; the run is saved${options.resumeCommand ? `: continue it with \`${options.resumeCommand}\`` : ""}`,
  );
  return EXIT.stopped;
}

/**
 * Runs the graph from `start` until it ends or waits for a person, with live progress on stderr;
 * answers approval requests through `options.approve`. Returns the process exit code.
 */
export async function streamRun(
  agent: Agent,
  start: RunStart,
  settings: Settings,
  options: RunOptions = {},
): Promise<number> {
  const from = options.from ?? { attempt: 0, usage: { totalTokens: 0 } };
  const reporter = new ProgressReporter({ from: { attempt: from.attempt, tokens: from.usage.totalTokens } });

  let next: RunStart = start;
  let outcome: RunStop;
  const stopWatching = options.watchStore?.((event) => {
    if (event.threadId === undefined || event.threadId === options.threadId) reporter.note(describeStoreWait(event));
  });
  try {
    for (;;) {
      outcome = await streamOnce(agent, next, settings, options, reporter);
      const request = outcome.request;
      if (!request) break;
      reporter.stop();
      const decision = options.approve
        ? await options.approve(request, {
            previousCode: await previousProgram(agent, options.threadId, request.attempt),
            signal: options.signal,
          })
        : "later";
      if (decision === "interrupted") return interrupted(options, reporter);
      if (decision === "later") return await stopForApproval(outcome.state, request, options, reporter);
      reporter.note(describeDecision(decision));
      next = new Command({ resume: decision });
    }
  } catch (error) {
    if (error instanceof StoreUnavailableError) return storeGone(error, options, reporter);
    if (!options.signal?.aborted) throw error;
    return interrupted(options, reporter);
  } finally {
    stopWatching?.();
    reporter.stop();
  }

  const final = outcome.state;
  reporter.finished(final);
  if (final.status === "model_error" && options.replayedFrom) {
    reporter.note(
      `a replay answers only the requests that were recorded: replay with the task and settings of the recorded run, or record this one anew with --record and a model`,
    );
  } else if (final.status === "model_error" && options.resumeCommand) {
    reporter.note(
      `the run is saved: \`${options.resumeCommand}\` repeats the ${final.resumeFrom ?? "failed"} call once the model server answers`,
    );
  }
  if (options.artifactsTo) await copyArtifacts(final, options.artifactsTo, reporter);
  const summary = { ...summarizeRun(final, options.threadId), ...options.extraSummary };
  const shown =
    final.status === "passed"
      ? `final program (attempt ${final.attempt}, passed)`
      : `best program (attempt ${final.best?.attempt ?? final.attempt}, ${final.status})`;
  await emit(options.json ? `${JSON.stringify(summary, null, 2)}\n` : summary.code, options, reporter, shown);
  return final.status === "passed" ? EXIT.passed : EXIT.failed;
}

/** The database stayed away past the run's bound: the run stopped at its last saved checkpoint. */
function storeGone(error: StoreUnavailableError, options: RunOptions, reporter: ProgressReporter): number {
  reporter.stop();
  reporter.note(
    `${error.message}; the run stopped at its last saved checkpoint${options.resumeCommand ? `: continue it with \`${options.resumeCommand}\` once the store is back` : ""}`,
  );
  return EXIT.storeUnavailable;
}

/** No one to ask here: leave the run paused, show the program, say how to decide later. */
async function stopForApproval(
  state: AgentState,
  request: ApprovalRequest,
  options: RunOptions,
  reporter: ProgressReporter,
): Promise<number> {
  reporter.note(
    `awaiting approval of attempt ${request.attempt} in thread ${options.threadId ?? "(none)"}; the program is on stdout`,
  );
  if (options.resumeCommand) {
    reporter.note(`decide with: ${options.resumeCommand} --approve | --reject "reason" | --edit FILE`);
  }
  const summary = {
    ...summarizeRun(state, options.threadId),
    ...options.extraSummary,
    status: "awaiting_approval",
    approval: request,
  };
  await emit(
    options.json ? `${JSON.stringify(summary, null, 2)}\n` : request.code,
    options,
    reporter,
    `program awaiting approval (attempt ${request.attempt})`,
  );
  return EXIT.awaitingApproval;
}
