import { randomUUID } from "node:crypto";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { Command } from "@langchain/langgraph";
import type { z } from "zod";
import {
  type Agent,
  type AgentState,
  type ApprovalDecision,
  checkModelConfig,
  checkNewRun,
  checkSandbox,
  createAgent,
  describeStatus,
  driveRun,
  type ModelCallsMode,
  type OutputEvent,
  parseSettings,
  planResume,
  type RunStart,
  type RunStop,
  SETTING_TABLE,
  type Settings,
  type SettingsInput,
  type SettingsShape,
  type SettingTable,
  SharedSandboxes,
  StoreUnavailableError,
  settingsSchemaOf,
  stepsLeft,
  UsageError,
} from "../internal.js";
import { artifactsFolder, describeStoreWait, type RunStore, withThreadLease } from "../store/index.js";

/** The shape a client's settings have: each setting of the table but the server-only ones, optional. */
type ClientSettingsShape<T extends SettingTable> = {
  [K in keyof SettingsShape<T> as T[K] extends { serverOnly: true } ? never : K]: z.ZodOptional<SettingsShape<T>[K]>;
};

/**
 * The settings an MCP client may give, each optional: every setting of the table but the server's
 * own (`serverOnly`: a folder it writes, a package index, its shared sandbox pool).
 */
export function clientSettingsSchemaOf<T extends SettingTable>(table: T): z.ZodObject<ClientSettingsShape<T>> {
  const serverOnly = Object.keys(table).filter((key) => table[key]?.serverOnly);
  const schema: z.ZodObject = settingsSchemaOf<SettingTable>(table);
  const mask: Record<string, true> = {};
  for (const key of serverOnly) mask[key] = true;
  // zod cannot follow a mask computed from a generic table; the shape type above says what it leaves.
  return schema.omit(mask).partial() as unknown as z.ZodObject<ClientSettingsShape<T>>;
}

export const ClientSettingsSchema = clientSettingsSchemaOf(SETTING_TABLE);

/** What one attempt ended in, and each line the program printed, as the run goes. */
export interface RunListener {
  attemptEnded(event: { attempt: number; maxAttempts: number; passed: boolean; summary: string }): Promise<void>;
  output(event: OutputEvent): Promise<void>;
  /** The run waits for its store, or the store answered again: one line each, as the CLI prints them. */
  storeWait(line: string): Promise<void>;
}

/** Where a run stands when a tool call returns. */
export interface RunOutcome {
  threadId: string;
  /** The run's status, or `awaiting_approval` when it paused for a person. */
  status: AgentState["status"] | "awaiting_approval";
  state: AgentState;
  /** The program waiting for approval, when paused. */
  awaiting?: { attempt: number; code: string };
}

export interface McpRunsOptions {
  store: RunStore;
  /** A model for every role (tests, embedding); otherwise built from the environment by the run's settings. */
  model?: BaseChatModel;
  /** Record or replay every model call of the runs this server makes. */
  modelCalls?: ModelCallsMode;
  /**
   * The server's own settings, laid over every run a client starts (`selfheal mcp --allow-host`):
   * those the setting table keeps from clients (`serverOnly`), such as the hosts its programs may reach.
   */
  serverSettings?: Pick<SettingsInput, "allowHosts">;
}

/**
 * The runs an MCP server starts and continues, in the same store as the CLI's: each run's
 * settings are saved as `selfheal run` saves them, so `selfheal runs`, `report` and `resume` see it.
 * One agent per sandbox kind, shared by every client of this server.
 */
export class McpRuns {
  private madeAgent: Agent | undefined;
  private readonly sandboxes = new SharedSandboxes();
  /** Threads a call of this server is running: the store's lease is per process, so it lets them all through. */
  private readonly running = new Set<string>();

  constructor(private readonly options: McpRunsOptions) {}

  get store(): RunStore {
    return this.options.store;
  }

  /** The one agent of this server: its runs take their sandboxes, by kind and pool size, from shared ones. */
  private agent(): Agent {
    this.madeAgent ??= createAgent({
      model: this.options.model,
      sandboxes: this.sandboxes,
      checkpointer: this.store.checkpointer,
      modelCalls: this.options.modelCalls,
    });
    return this.madeAgent;
  }

  /** Whose model answers: this server's own (injected, or recorded calls), or one built from the environment. */
  private modelSource(): "own" | "environment" {
    return this.options.model || this.options.modelCalls ? "own" : "environment";
  }

  /** Starts a new run in a new (or named) thread and runs it until it ends, pauses, or `signal` stops it. */
  async solve(
    given: { input: unknown; settings?: SettingsInput; threadId?: string },
    listener: RunListener,
    signal: AbortSignal,
  ): Promise<RunOutcome> {
    const { input, settings } = await checkNewRun(
      given.input,
      parseSettings({
        ...given.settings,
        ...this.options.serverSettings,
        artifactsDir: artifactsFolder(this.store.location),
      }),
      { model: this.modelSource() },
    );
    const threadId = given.threadId ?? randomUUID();
    if ((await this.store.getRun(threadId)) || (await this.snapshot(threadId)).createdAt)
      throw new UsageError(`thread ${threadId} already has a run; continue it with the resume tool`);
    return this.withLease(threadId, async () => {
      await this.store.saveRun({ threadId, task: input.task, settings, createdAt: new Date().toISOString() });
      return this.runThread(threadId, input, settings, listener, signal);
    });
  }

  /** Continues a thread that stopped: cancelled mid-way, paused for approval, or ended on a model error. */
  async resume(
    given: { threadId: string; decision?: ApprovalDecision; settings?: SettingsInput },
    listener: RunListener,
    signal: AbortSignal,
  ): Promise<RunOutcome> {
    const { threadId, decision } = given;
    const record = await this.store.getRun(threadId);
    const snapshot = await this.snapshot(threadId);
    if (!snapshot.createdAt) throw new UsageError(`no run with thread id ${threadId}`);
    const settings = parseSettings({ ...record?.settings, ...given.settings });
    const waiting = snapshot.tasks.some((task) => task.interrupts.length > 0);
    if (waiting && !decision) {
      throw new UsageError(`thread ${threadId} is waiting for approval: give a decision (approve, reject or edit)`);
    }
    if (decision && !waiting)
      throw new UsageError(`thread ${threadId} is not waiting for approval (${describeStatus(snapshot)})`);
    const plan = planResume(snapshot, this.agent());
    if ("finished" in plan) {
      throw new UsageError(
        `thread ${threadId} already ended: ${plan.finished.status}; start a new run with the solve tool`,
      );
    }
    if (this.modelSource() === "environment") checkModelConfig();
    await checkSandbox({ kind: settings.sandbox });
    const start = decision ? new Command({ resume: decision }) : plan.start;
    return this.withLease(threadId, () => this.runThread(threadId, start, settings, listener, signal));
  }

  private snapshot(threadId: string) {
    return this.agent().getState({ configurable: { thread_id: threadId } });
  }

  private async withLease<T>(threadId: string, use: () => Promise<T>): Promise<T> {
    if (this.running.has(threadId))
      throw new UsageError(`thread ${threadId} is running right now; try again when it stops`);
    this.running.add(threadId);
    try {
      return await withThreadLease(this.store, threadId, use);
    } finally {
      this.running.delete(threadId);
    }
  }

  private async runThread(
    threadId: string,
    start: RunStart,
    settings: Settings,
    listener: RunListener,
    signal: AbortSignal,
  ): Promise<RunOutcome> {
    const agent = this.agent();
    let attempt = (await agent.getState({ configurable: { thread_id: threadId } })).values.attempt ?? 0;
    const stopWatching = this.store.onWait((event) => {
      if (event.threadId === threadId) void listener.storeWait(describeStoreWait(event));
    });
    let stop: RunStop;
    try {
      // Each attempt's end and each line of output go to the listener as they come.
      stop = await driveRun(agent, start, { context: settings, threadId, signal, output: true }, async (event) => {
        if (event.kind === "output") await listener.output(event.event);
        if (event.kind !== "updated") return;
        const { update } = event;
        if (typeof update.attempt === "number") attempt = update.attempt;
        if (update.critique) {
          await listener.attemptEnded({
            attempt,
            maxAttempts: settings.maxAttempts,
            passed: update.critique.passed,
            summary: update.critique.summary,
          });
        }
      });
    } catch (error: unknown) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      throw new StoreUnavailableError(
        `${error.message}; the run stopped at its last saved checkpoint: continue it with the resume tool once the store is back`,
        { cause: error },
      );
    } finally {
      stopWatching();
    }
    const { state, paused, request } = stop;
    if (!paused) return { threadId, status: state.status, state };
    return {
      threadId,
      status: "awaiting_approval",
      state,
      ...(request ? { awaiting: { attempt: request.attempt, code: request.code } } : {}),
    };
  }

  /** The runs in the store, newest first: the ones the CLI or an MCP client started. */
  async list(limit: number) {
    const agent = this.agent();
    const rows = [];
    for (const record of await this.store.listRuns()) {
      const snapshot = await agent.getState({ configurable: { thread_id: record.threadId } });
      const values: Partial<AgentState> = snapshot.values;
      rows.push({
        threadId: record.threadId,
        task: record.task,
        status: snapshot.createdAt ? describeStatus(snapshot) : "not started",
        attempts: values.attempt ?? 0,
        tokens: values.usage?.totalTokens ?? 0,
        updatedAt: snapshot.createdAt ?? record.createdAt,
      });
    }
    rows.sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
    return rows.slice(0, limit);
  }

  /** One run's story: status, each attempt, its distinct errors, the tokens, and how many checkpoints it has. */
  async history(threadId: string) {
    const agent = this.agent();
    const config = { configurable: { thread_id: threadId } };
    const snapshot = await agent.getState(config);
    if (!snapshot.createdAt) throw new UsageError(`no run with thread id ${threadId}`);
    let checkpoints = 0;
    for await (const _ of agent.getStateHistory(config)) checkpoints++;
    const state: AgentState = snapshot.values;
    return {
      threadId,
      task: state.task,
      status: describeStatus(snapshot),
      reason: state.reason ?? null,
      attempts: state.history,
      errors: state.errors,
      usage: state.usage,
      notes: state.notes,
      code: state.status === "passed" ? state.code : (state.best?.code ?? state.code),
      next: stepsLeft(snapshot),
      checkpoints,
    };
  }

  async close(): Promise<void> {
    await this.sandboxes.close();
  }
}
