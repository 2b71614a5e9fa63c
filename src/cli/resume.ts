import { createDemoModel, DEMO_MODEL_NAME } from "./demo.js";
import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { Command, type StateSnapshot } from "@langchain/langgraph";
import { createAgent, type Agent } from "../graph/index.js";
import type { AgentState } from "../graph/state.js";
import { ApprovalDecisionSchema, type ApprovalDecision } from "../nodes/approval.js";
import { forkCheckpoint, type RunStore } from "../store.js";
import { hasModelConfig, MissingModelConfigError, modelRetriesFromEnv } from "../tools/models.js";
import { checkSandbox } from "../tools/sandbox/index.js";
import { canAskPerson, terminalApprover } from "./approval-prompt.js";
import { settingsWithFlags, type SettingFlags } from "./options.js";
import { ProgressReporter } from "./progress.js";
import { checkOutputFile, EXIT, streamRun, summarizeRun, type ApprovalHandler, type RunStart } from "./run.js";
import { abortOnCtrlC, describeModel, noSuchRunError, resumeCommandFor, threadExists, UsageError, withThreadLease, withThreadStore, type StoreFlags } from "./session.js";

export interface ResumeFlags extends StoreFlags, SettingFlags {
  approve?: boolean;
  reject?: string;
  edit?: string;
  from?: string;
  thread?: string;
  json?: boolean;
  out?: string;
}

async function decisionFromFlags(flags: ResumeFlags): Promise<ApprovalDecision | undefined> {
  const given = [flags.approve, flags.reject !== undefined, flags.edit !== undefined].filter(Boolean).length;
  if (given > 1) throw new UsageError("give one of --approve, --reject or --edit");
  if (flags.approve) return { action: "approve" };
  if (flags.reject !== undefined) {
    const parsed = ApprovalDecisionSchema.safeParse({ action: "reject", reason: flags.reject });
    if (!parsed.success) throw new UsageError("--reject needs a reason, e.g. --reject \"do not delete files\"");
    return parsed.data;
  }
  if (flags.edit !== undefined) {
    const code = await readFile(flags.edit, "utf8").catch(() => {
      throw new UsageError(`--edit: cannot read ${flags.edit}`);
    });
    const parsed = ApprovalDecisionSchema.safeParse({ action: "edit", code });
    if (!parsed.success) throw new UsageError(`--edit: ${flags.edit} is empty`);
    return parsed.data;
  }
  return undefined;
}

const awaitingApproval = (snapshot: StateSnapshot) => snapshot.tasks.some((task) => task.interrupts.length > 0);

/**
 * How to continue a thread from its head:
 * - paused for approval, or stopped between steps (killed, Ctrl-C): run on from the checkpoint;
 * - ended on a model error: run the node whose call failed again, with the run marked running;
 * - ended otherwise: nothing to run.
 */
function planResume(snapshot: StateSnapshot, agent: Agent): { start: RunStart } | { finished: AgentState } {
  const values: AgentState = snapshot.values;
  if (snapshot.next.length > 0) return { start: null };
  if (values.status === "model_error" && values.resumeFrom && values.resumeFrom in agent.nodes) {
    return {
      start: new Command({ goto: values.resumeFrom, update: { status: "running", reason: undefined, resumeFrom: undefined } }),
    };
  }
  return { finished: values };
}

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

  return withThreadStore(flags, threadId, async (store) => {
    const reporter = new ProgressReporter();
    const record = await store.getRun(threadId);
    // A demo run is resumed with the same scripted model; any other needs a configured one.
    const scripted = record?.settings.model === DEMO_MODEL_NAME && !flags.model;
    if (!scripted && !hasModelConfig()) throw new MissingModelConfigError();
    const agent = createAgent({ model: scripted ? createDemoModel() : undefined, checkpointer: store.checkpointer });
    if (!(await threadExists(store, threadId))) throw noSuchRunError(threadId, store.location);
    if (!record) reporter.note(`thread ${threadId} was not started by the CLI: resuming it with default settings`);
    const settings = settingsWithFlags(record?.settings ?? {}, flags);

    let target = threadId;
    let extraSummary: Record<string, unknown> = {};
    if (flags.from) {
      // A fork always runs on, so its sandbox is checked before the new thread is made.
      await checkSandbox({ kind: settings.sandbox });
      target = await fork(store, agent, threadId, flags.from, flags.thread ?? randomUUID());
      await store.saveRun({
        threadId: target,
        task: record?.task ?? "",
        settings,
        createdAt: new Date().toISOString(),
        forkedFrom: { threadId, checkpointId: flags.from },
      });
      extraSummary = { forkedFrom: { threadId, checkpointId: flags.from } };
      reporter.note(`forked thread ${threadId} at checkpoint ${flags.from} into thread ${target}; the original is unchanged`);
    }

    return withThreadLease(store, target, async () => {
      const config = { configurable: { thread_id: target } };
      const snapshot = await agent.getState(config);
      if (decision && !awaitingApproval(snapshot) && !snapshot.next.includes("approval")) {
        throw new UsageError(`thread ${target} is not waiting for approval (${snapshot.next.length > 0 ? `next: ${snapshot.next.join(", ")}` : "it has ended"})`);
      }
      const plan = planResume(snapshot, agent);
      const resumeCommand = resumeCommandFor(target, flags);
      if ("finished" in plan) {
        reporter.note(`thread ${target} already ended: ${plan.finished.status}; to try again from an earlier point, pick a checkpoint from \`selfheal history ${target}\` and use --from`);
        const summary = { ...summarizeRun(plan.finished, target), ...extraSummary };
        const text = flags.json ? `${JSON.stringify(summary, null, 2)}\n` : summary.code;
        process.stdout.write(text);
        return plan.finished.status === "passed" ? EXIT.passed : EXIT.failed;
      }
      if (!flags.from) await checkSandbox({ kind: settings.sandbox });
      const values: AgentState = snapshot.values;
      reporter.note(describeModel(settings, { scripted }));
      reporter.note(
        `thread ${target}: resuming at step ${snapshot.metadata?.step ?? "?"} (attempt ${values.attempt}, ${plan.start instanceof Command ? `retrying the ${values.resumeFrom} call` : `next: ${snapshot.next.join(", ")}`})`,
      );
      const ctrlC = abortOnCtrlC();
      try {
        return await streamRun(agent, plan.start, settings, {
          json: flags.json,
          out: flags.out,
          threadId: target,
          resumeCommand,
          approve: approvalHandler(decision),
          from: values,
          extraSummary,
          signal: ctrlC.signal,
        });
      } finally {
        ctrlC.dispose();
      }
    });
  });
}

async function fork(store: RunStore, agent: Agent, threadId: string, checkpointId: string, target: string): Promise<string> {
  if (await threadExists(store, target)) throw new UsageError(`thread ${target} already exists; name a new one with --thread`);
  const snapshot = await agent.getState({ configurable: { thread_id: threadId, checkpoint_id: checkpointId } });
  if (snapshot.config.configurable?.checkpoint_id !== checkpointId || !snapshot.createdAt) {
    throw new UsageError(`thread ${threadId} has no checkpoint ${checkpointId}; see \`selfheal history ${threadId}\``);
  }
  if (snapshot.next.length === 0) {
    throw new UsageError(`checkpoint ${checkpointId} is where the run ended; pick an earlier one from \`selfheal history ${threadId}\``);
  }
  await forkCheckpoint(store.checkpointer, { threadId, checkpointId }, target);
  return target;
}
