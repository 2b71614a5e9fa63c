import { randomUUID } from "node:crypto";
import { Command as GraphCommand, type StateSnapshot } from "@langchain/langgraph";
import {
  type Agent,
  type AgentState,
  type ApprovalDecision,
  ApprovalDecisionSchema,
  checkModelConfig,
  checkSandbox,
  createAgent,
  modelRetriesFromEnv,
  planResume,
  type Settings,
  stepsLeft,
} from "../../internal.js";
import { forkCheckpoint, type RunStore } from "../../store/index.js";
import { canAskPerson, terminalApprover } from "../approval-prompt.js";
import { scriptedDemoModelFor } from "../data-demo-model.js";
import { DEMO_MODEL_NAME } from "../demo-model.js";
import { settingsWithFlags } from "../flag-settings.js";
import { cliCommand } from "../invocation.js";
import { type ModelCallFlags, modelCallsFromFlags, readFlagFile, type SettingFlags } from "../options.js";
import { ProgressReporter } from "../progress.js";
import { describeModelSource, describeSandboxChoice } from "../run-lines.js";
import {
  abortOnCtrlC,
  noSuchRunError,
  resumeCommandFor,
  type StoreFlags,
  threadExists,
  UsageError,
  withThreadLease,
  withThreadStore,
} from "../session.js";
import { type ApprovalHandler, checkOutputFile, EXIT, streamRun, summarizeRun } from "../stream-run.js";
import { reportAtEnd } from "./report.js";

export interface ResumeFlags extends StoreFlags, SettingFlags, ModelCallFlags {
  approve?: boolean;
  reject?: string;
  edit?: string;
  from?: string;
  thread?: string;
  json?: boolean;
  out?: string;
  report?: string;
}

async function decisionFromFlags(flags: ResumeFlags): Promise<ApprovalDecision | undefined> {
  const given = [flags.approve, flags.reject !== undefined, flags.edit !== undefined].filter(Boolean).length;
  if (given > 1) throw new UsageError("give only one of --approve, --reject or --edit");
  if (flags.approve) return { action: "approve" };
  if (flags.reject !== undefined) {
    const parsed = ApprovalDecisionSchema.safeParse({ action: "reject", reason: flags.reject });
    if (!parsed.success) throw new UsageError('--reject needs a reason, e.g. --reject "do not delete files"');
    return parsed.data;
  }
  if (flags.edit !== undefined) {
    const code = await readFlagFile("--edit", flags.edit);
    const parsed = ApprovalDecisionSchema.safeParse({ action: "edit", code });
    if (!parsed.success) throw new UsageError(`--edit: ${flags.edit} is empty`);
    return parsed.data;
  }
  return undefined;
}

const awaitingApproval = (snapshot: StateSnapshot) => snapshot.tasks.some((task) => task.interrupts.length > 0);

/**
 * The decision given on the command line answers the first approval request, whether it is
 * already pending or comes up as the run continues (a fork made just before approval); later
 * requests go to the person at the terminal, or leave the run waiting again.
 */
function approvalHandler(decision: ApprovalDecision | undefined): ApprovalHandler | undefined {
  const terminal = canAskPerson() ? terminalApprover() : undefined;
  if (!decision) return terminal;
  let pending: ApprovalDecision | undefined = decision;
  return async (request, context) => {
    if (pending) {
      const answer = pending;
      pending = undefined;
      return answer;
    }
    return terminal ? terminal(request, context) : "later";
  };
}

/** `selfheal resume <thread>`: continue a run, decide its approval, or fork it from a checkpoint. */
export async function resumeRun(threadId: string, flags: ResumeFlags): Promise<number> {
  const decision = await decisionFromFlags(flags);
  if (flags.thread && !flags.from) throw new UsageError("--thread names the new thread of a fork: use it with --from");
  modelRetriesFromEnv();
  if (flags.out) checkOutputFile(flags.out);
  if (flags.report) checkOutputFile(flags.report, "--report");

  return withThreadStore(flags, threadId, async (store) => {
    const reporter = new ProgressReporter();
    const record = await store.getRun(threadId);
    // A demo run is resumed with the same scripted model; any other needs a configured one.
    const scripted = record?.settings.model === DEMO_MODEL_NAME && !flags.model;
    if (!scripted && !flags.replay) checkModelConfig();
    const agent = createAgent({
      model: scripted ? scriptedDemoModelFor(record?.task) : undefined,
      checkpointer: store.checkpointer,
      modelCalls: modelCallsFromFlags(flags),
    });
    if (!(await threadExists(store, threadId))) throw noSuchRunError(threadId, store.location);
    if (!record) reporter.note(`thread ${threadId} was not started by the CLI: resuming it with default settings`);
    const settings = settingsWithFlags(record?.settings ?? {}, flags);

    const resume: Resumption = { store, agent, settings, flags, decision, scripted, reporter, extraSummary: {} };
    if (!flags.from) return withThreadLease(store, threadId, () => continueThread(threadId, resume));
    // A fork always runs on, so its sandbox is checked before the new thread is made.
    await checkSandbox({ kind: settings.sandbox });
    const target = await forkRun(store, agent, threadId, flags.from, flags.thread ?? randomUUID());
    await store.saveRun({
      threadId: target,
      task: record?.task ?? "",
      settings,
      createdAt: new Date().toISOString(),
      forkedFrom: { threadId, checkpointId: flags.from },
    });
    resume.extraSummary = { forkedFrom: { threadId, checkpointId: flags.from } };
    reporter.note(
      `forked thread ${threadId} at checkpoint ${flags.from} into thread ${target}; the original is unchanged`,
    );
    return withThreadLease(store, target, () => continueThread(target, resume));
  });
}

/** What continuing a thread needs, gathered once by `resumeRun`. */
interface Resumption {
  store: RunStore;
  agent: Agent;
  settings: Settings;
  flags: ResumeFlags;
  decision: ApprovalDecision | undefined;
  scripted: boolean;
  reporter: ProgressReporter;
  /** More fields for the `--json` result, e.g. which checkpoint a fork came from. */
  extraSummary: Record<string, unknown>;
}

const attemptsRun = (attempts: number) => `${attempts} attempt${attempts === 1 ? "" : "s"} run`;

/**
 * Where a resumed run picks up, numbered as the approval prompt and the progress lines number
 * attempts: the program about to be written, approved or run is attempt `attempts + 1`; the one
 * about to be judged is attempt `attempts`.
 */
export function describeResumePoint(attempts: number, next: readonly string[]): string {
  const coming = attempts + 1;
  const steps = next.map((node) => {
    switch (node) {
      case "generator":
        return `the generator writes attempt ${coming}`;
      case "fixer":
        return `the fixer writes attempt ${coming}`;
      case "approval":
        return `approval of attempt ${coming}`;
      case "executor":
        return `running attempt ${coming}`;
      case "critic":
        return `judging attempt ${attempts}`;
      default:
        return node;
    }
  });
  return `${attemptsRun(attempts)}; next: ${steps.join(", ")}`;
}

/** Runs the thread on from its head while holding its lease, or reports that it already ended. */
async function continueThread(target: string, resume: Resumption): Promise<number> {
  const { agent, settings, flags, decision, reporter, extraSummary } = resume;
  const snapshot = await agent.getState({ configurable: { thread_id: target } });
  const left = stepsLeft(snapshot);
  if (decision && !awaitingApproval(snapshot) && !snapshot.next.includes("approval")) {
    throw new UsageError(
      `thread ${target} is not waiting for approval (${left.length > 0 ? `next: ${left.join(", ")}` : "it has ended"})`,
    );
  }
  const plan = planResume(snapshot, agent);
  if ("finished" in plan) {
    reporter.note(
      `thread ${target} already ended: ${plan.finished.status}; to try again from an earlier point, pick a checkpoint from \`${cliCommand()} history ${target}\` and use --from`,
    );
    const summary = { ...summarizeRun(plan.finished, target), ...extraSummary };
    process.stdout.write(flags.json ? `${JSON.stringify(summary, null, 2)}\n` : summary.code);
    return plan.finished.status === "passed" ? EXIT.passed : EXIT.failed;
  }
  const values: AgentState = snapshot.values;
  // A fork checked its sandbox before it was made.
  if (!flags.from) await checkSandbox({ kind: settings.sandbox, languages: [values.language] });
  for (const line of describeModelSource(settings, flags, { scripted: resume.scripted })) reporter.note(line);
  reporter.note(await describeSandboxChoice(settings.sandbox));
  reporter.note(
    `thread ${target}: resuming at step ${snapshot.metadata?.step ?? "?"} (${plan.start instanceof GraphCommand ? `${attemptsRun(values.attempt)}; retrying the ${values.resumeFrom} call` : describeResumePoint(values.attempt, left)})`,
  );
  const ctrlC = abortOnCtrlC();
  try {
    const exitCode = await streamRun(agent, plan.start, settings, {
      json: flags.json,
      out: flags.out,
      threadId: target,
      resumeCommand: resumeCommandFor(target, flags),
      replayedFrom: flags.replay,
      approve: approvalHandler(decision),
      from: values,
      extraSummary,
      signal: ctrlC.signal,
      watchStore: resume.store.onWait,
    });
    if (flags.report) await reportAtEnd(resume.store, target, flags.report);
    return exitCode;
  } finally {
    ctrlC.dispose();
  }
}

/** Copies the checkpoint into a new thread, after checking that there is something to run from it. */
async function forkRun(
  store: RunStore,
  agent: Agent,
  threadId: string,
  checkpointId: string,
  target: string,
): Promise<string> {
  if (await threadExists(store, target))
    throw new UsageError(`thread ${target} already exists; name a new one with --thread`);
  const snapshot = await agent.getState({ configurable: { thread_id: threadId, checkpoint_id: checkpointId } });
  if (snapshot.config.configurable?.checkpoint_id !== checkpointId || !snapshot.createdAt) {
    throw new UsageError(
      `thread ${threadId} has no checkpoint ${checkpointId}; see \`${cliCommand()} history ${threadId}\``,
    );
  }
  if (snapshot.next.length === 0) {
    throw new UsageError(
      `checkpoint ${checkpointId} is where the run ended; pick an earlier one from \`${cliCommand()} history ${threadId}\``,
    );
  }
  await forkCheckpoint(store.checkpointer, { threadId, checkpointId }, target);
  return target;
}
