import type {
  AgentState,
  ArtifactFile,
  Critique,
  Decision,
  Execution,
  HistoryEntry,
  Note,
  Objection,
  OutputLine,
  Usage,
} from "../internal.js";

/** One step of a run as a report reads it: the state after the step, and who wrote it. */
export interface RunStep {
  values: Partial<AgentState>;
  /** The node(s) that ran in this step (`generator`, `executor, critic`...); absent when not known. */
  node?: string;
  /** When the step's checkpoint was written (ISO time), when it came from a store. */
  createdAt?: string;
}

/** Tokens spent between the verdict on the attempt before and this one, by node. */
export type NodeTokens = Record<string, { inputTokens: number; outputTokens: number }>;

export interface AttemptTrace {
  attempt: number;
  /** Who wrote the program: generator, fixer, or a rewrite. */
  author: string;
  outcome: string;
  errorType?: string;
  fingerprint?: string;
  /** How many earlier attempts failed with the same fingerprint (0: first time it was seen). */
  repeatOf: number;
  /** Empty when the reply held no program. */
  code: string;
  run?: Execution;
  critique?: Critique;
  decision?: Decision;
  notes: Note[];
  objections: Objection[];
  tokens: number;
  tokensByNode: NodeTokens;
  /** From one verdict to the next, when the steps have times. */
  wallMs?: number;
  liveTail: OutputLine[];
  /**
   * What this attempt's program wrote under `out/`; `folder` holds the bytes when the run kept
   * this attempt's (the passing or best one), else null: only their names, sizes and hashes remain.
   */
  artifacts?: ArtifactsTrace;
  /** The critic model's review of a clean run (`llmReview`), when one ran for this attempt. */
  review?: ReviewTrace;
}

export interface ArtifactsTrace {
  folder: string | null;
  files: ArtifactFile[];
}

export interface ReviewTrace {
  verdict: "approved" | "rejected";
  /** The reviewer's reasons for a rejection (its hint for the fixer is the critique's diagnosis). */
  reasons?: string;
}

export interface RunTrace {
  task: string;
  language: string;
  status: string;
  reason?: string;
  threadId?: string;
  models: string[];
  usage?: Usage;
  attempts: AttemptTrace[];
  /** The nodes in the order they ran, one entry per node run. */
  path: string[];
  /** First to last step, when the steps have times. */
  wallMs?: number;
  /** The graph's own nodes and edges, to draw the path on. */
  graph?: { nodes: string[]; edges: Array<{ source: string; target: string }> };
  /** The artifacts the run kept: the passing attempt's, or the best one's. */
  artifacts?: ArtifactsTrace & { attempt: number };
  /** With candidates: how many of the latest round's candidates agreed (`3 of 4 candidates print the same`). */
  agreement?: string;
}

export interface TraceMeta {
  threadId?: string;
  models?: string[];
  graph?: RunTrace["graph"];
  /** The run's status when the last state does not say it, e.g. `awaiting approval`. */
  status?: string;
}

/**
 * An attempt's artifacts: the files its run listed, and the kept folder when the run kept this
 * attempt's bytes (the folders of other attempts are removed when a better one comes).
 */
function artifactsOf(
  run: Execution | undefined,
  attempt: number,
  final: Partial<AgentState>,
): ArtifactsTrace | undefined {
  const files = run?.artifacts?.files ?? [];
  if (files.length === 0) return undefined;
  const kept = final.artifacts?.attempt === attempt ? (final.artifacts.folder ?? null) : null;
  return { folder: kept, files };
}

/**
 * Whether the critic model reviewed this attempt and what it concluded. The state records no
 * review as such: the critic's tokens on this attempt say one ran, and a `ReviewRejected`
 * outcome that it said no (a review runs only for a clean run, which otherwise passes).
 */
function reviewOf(entry: HistoryEntry, tokens: NodeTokens, critique: Critique | undefined): ReviewTrace | undefined {
  const critic = tokens.critic;
  if (!critic || critic.inputTokens + critic.outputTokens === 0) return undefined;
  if (entry.outcome !== "ReviewRejected") return { verdict: "approved" };
  return { verdict: "rejected", reasons: critique?.summary.replace(/^Review:\s*/, "") };
}

function tokensBetween(before: Usage | undefined, after: Usage | undefined): NodeTokens {
  const spent: NodeTokens = {};
  for (const [node, count] of Object.entries(after?.byNode ?? {})) {
    const earlier = before?.byNode[node];
    const inputTokens = count.inputTokens - (earlier?.inputTokens ?? 0);
    const outputTokens = count.outputTokens - (earlier?.outputTokens ?? 0);
    if (inputTokens + outputTokens > 0) spent[node] = { inputTokens, outputTokens };
  }
  return spent;
}

const timeOf = (step: RunStep | undefined): number | undefined =>
  step?.createdAt ? Date.parse(step.createdAt) : undefined;

/** The step at which each attempt's verdict was booked: the first whose history holds it. */
function verdictSteps(steps: readonly RunStep[]): RunStep[] {
  const found: RunStep[] = [];
  for (const step of steps) {
    while ((step.values.history?.length ?? 0) > found.length) found.push(step);
  }
  return found;
}

/** A program the generator wrote after the critic asked for a fresh rewrite, told apart from the first draft. */
function authorOf(entry: HistoryEntry, before: RunStep | undefined): string {
  return entry.node === "generator" && before?.values.decision?.next === "generator" ? "rewrite" : entry.node;
}

function attemptTrace(
  entry: HistoryEntry,
  step: RunStep,
  before: RunStep | undefined,
  final: Partial<AgentState>,
  seen: Map<string, number>,
): AttemptTrace {
  const { values } = step;
  const repeatOf = entry.fingerprint ? (seen.get(entry.fingerprint) ?? 0) : 0;
  if (entry.fingerprint) seen.set(entry.fingerprint, repeatOf + 1);
  const started = timeOf(before);
  const ended = timeOf(step);
  const failed = entry.outcome !== "passed";
  const tokensByNode = tokensBetween(before?.values.usage, values.usage);
  const artifacts = artifactsOf(values.lastRun, entry.attempt, final);
  const review = reviewOf(entry, tokensByNode, values.critique);
  return {
    attempt: entry.attempt,
    author: authorOf(entry, before),
    outcome: entry.outcome,
    ...(failed ? { errorType: entry.outcome } : {}),
    ...(entry.fingerprint ? { fingerprint: entry.fingerprint } : {}),
    repeatOf,
    code: values.draft?.hasCode === false ? "" : (values.code ?? ""),
    ...(values.lastRun ? { run: values.lastRun } : {}),
    ...(values.critique ? { critique: values.critique } : {}),
    ...(values.decision ? { decision: values.decision } : {}),
    notes: (final.notes ?? []).filter((note) => note.attempt === entry.attempt),
    objections: (final.objections ?? []).filter((objection) => objection.attempt === entry.attempt),
    tokens: entry.tokens,
    tokensByNode,
    ...(started !== undefined && ended !== undefined ? { wallMs: ended - started } : {}),
    liveTail: values.lastRun?.liveTail ?? [],
    ...(artifacts ? { artifacts } : {}),
    ...(review ? { review } : {}),
  };
}

/** Reads a run's steps, oldest first, into what its report shows. */
export function traceRun(steps: readonly RunStep[], meta: TraceMeta = {}): RunTrace {
  const final = steps.at(-1)?.values ?? {};
  const verdicts = verdictSteps(steps);
  const seen = new Map<string, number>();
  const attempts = (final.history ?? []).map((entry, index) =>
    attemptTrace(entry, verdicts[index] ?? steps.at(-1)!, index > 0 ? verdicts[index - 1] : steps[0], final, seen),
  );
  const first = timeOf(steps[0]);
  const last = timeOf(steps.at(-1));
  return {
    task: final.task ?? "",
    language: final.language ?? "python",
    status: meta.status ?? final.status ?? "running",
    ...(final.reason ? { reason: final.reason } : {}),
    ...(meta.threadId ? { threadId: meta.threadId } : {}),
    models: meta.models ?? [],
    ...(final.usage ? { usage: final.usage } : {}),
    attempts,
    path: steps.flatMap((step) => (step.node ? step.node.split(", ") : [])),
    ...(first !== undefined && last !== undefined ? { wallMs: last - first } : {}),
    ...(meta.graph ? { graph: meta.graph } : {}),
    ...(final.artifacts && final.artifacts.files.length > 0 ? { artifacts: final.artifacts } : {}),
    ...(final.candidateChoice ? { agreement: final.candidateChoice.agreement } : {}),
  };
}
