import { ReducedValue, StateSchema } from "@langchain/langgraph";
import { z } from "zod";
import { ArtifactFileSchema, ExpectedArtifactsSchema, InputsSchema } from "./data-files.js";
import {
  addUsage,
  type BestAttempt,
  BestAttemptSchema,
  ErrorObservationSchema,
  ErrorRecordSchema,
  emptyUsage,
  HistoryEntrySchema,
  keepHigherScore,
  ModelCallUsageSchema,
  mergeErrors,
  UsageSchema,
} from "./ledger.js";
import { LANGUAGES, RunResultSchema, TestIsolationSchema } from "./run-result.js";
import { RuntimeValuesSchema } from "./runtime-values.js";

/** `invalid_input`: an input file is missing or too big; the run ends before any model call. */
export const RUN_STATUSES = [
  "running",
  "passed",
  "failed",
  "stuck",
  "budget_exhausted",
  "model_error",
  "invalid_input",
] as const;
export type RunStatusValue = (typeof RUN_STATUSES)[number];

/** One line a program printed, as it was streamed while the program ran. */
export const OutputLineSchema = z.object({
  stream: z.enum(["stdout", "stderr"]),
  line: z.string(),
});
export type OutputLine = z.infer<typeof OutputLineSchema>;

/**
 * How much of the live output an attempt keeps: the last lines, each cut short. A program that
 * prints a million lines must not grow every checkpoint (and the run report) by as much. The tail
 * lives in `lastRun`, which each attempt replaces, not in `history`: every checkpoint stores the
 * whole history again, so a tail per entry would grow the store with the square of the attempts.
 * Each attempt's tail is in the checkpoints of that attempt, where the run report reads it.
 */
export const LIVE_TAIL_LINES = 40;
export const LIVE_LINE_CHARS = 400;

/** A line of the program that ends the process (`sys.exit(main())`), as found in its text. */
export const ExitCallSchema = z.object({ line: z.number().int(), text: z.string() });
export type ExitCall = z.infer<typeof ExitCallSchema>;

export const ExecutionSchema = RunResultSchema.extend({
  /** The last LIVE_TAIL_LINES lines as streamed, stdout and stderr in the order they came. */
  liveTail: z.array(OutputLineSchema).optional(),
  /** False when an objection kept the program from running at all. */
  ran: z.boolean().default(true),
  /** True when the failure was raised inside the acceptance tests rather than the program. */
  failedInTests: z.boolean().default(false),
  /** Where the failure happened, from 0 (first line) to 1 (last test line); used to rank attempts. */
  progress: z.number().min(0).max(1).nullable().default(null),
  /** Packages installed during this attempt, after which the same program ran again (see settings.packages). */
  installed: z.array(z.string()).optional(),
  /**
   * With acceptance tests: true when the mark the harness writes after the last test statement
   * came back from this run. A clean exit without it is no pass (see core/verdict.ts).
   */
  testsCompleted: z.boolean().optional(),
  /** With acceptance tests: whether they ran in a process of their own or in the program's (see `testIsolation`). */
  testIsolation: TestIsolationSchema.optional(),
  /** Where the program's text calls for the process to end; named when the tests did not finish. */
  exitCalls: z.array(ExitCallSchema).optional(),
  /**
   * What the failed run computed: the failed check's operands, the innermost frames' locals, the
   * calls the failing test line made (see `runtimeValues`). Cut and masked before it gets here.
   */
  values: RuntimeValuesSchema.optional(),
});
export type Execution = z.infer<typeof ExecutionSchema>;

export const CritiqueSchema = z.object({
  passed: z.boolean(),
  /** One line: what happened. */
  summary: z.string(),
  /** What the fixer should look at: the failing line, the critic model's hint. */
  diagnosis: z.string(),
});
export type Critique = z.infer<typeof CritiqueSchema>;

/** The artifacts kept for the run: the passing attempt's, or the best attempt's when none passed. */
export const KeptArtifactsSchema = z.object({
  attempt: z.number().int(),
  /** The host folder holding `out/...`; null when the run keeps no bytes (no `artifactsDir`). */
  folder: z.string().nullable(),
  files: z.array(ArtifactFileSchema),
  /** The attempt's score (see `best`); the `artifacts` reducer keeps the higher. */
  score: z.number().optional(),
});
export type KeptArtifacts = z.infer<typeof KeptArtifactsSchema>;

/** The program currently in `code`, as its author left it. */
export const DraftSchema = z.object({
  author: z.string(),
  /** Tokens the author spent writing it. */
  tokens: z.number().int(),
  /** False when the reply held no usable program (an objection says why). */
  hasCode: z.boolean().default(true),
});
export type Draft = z.infer<typeof DraftSchema>;

/**
 * A reason to fail one attempt that is not an exception in the program: no code in the reply,
 * a person rejecting it, a verifier's finding. Raised before execution, it stops the program from
 * running; after execution, it fails a run that exited cleanly. Either way it becomes an error
 * with a fingerprint, counts as the attempt's failure, and reaches the fixer.
 */
export const ObjectionSchema = z.object({
  /** The attempt it applies to: `attempt + 1` before execution, `attempt` after. */
  attempt: z.number().int(),
  /** The node that raised it. */
  source: z.string(),
  type: z.string(),
  message: z.string(),
});
export type Objection = z.infer<typeof ObjectionSchema>;

/** What a caller passes to `invoke`; validated before any model call. */
export const RunInputSchema = z.object({
  /** What the program must do, in plain words. */
  task: z
    .string({ error: "task must be a string" })
    .trim()
    .min(1, "task must not be empty")
    // Studio's form shows every input field as optional (LangGraph makes a graph's input schema
    // partial), so the description says what the form cannot.
    .describe("Required. What the program must do, in plain words"),
  /** Language the program is written in. */
  language: z
    .enum(LANGUAGES, { error: `language must be one of: ${LANGUAGES.join(", ")}` })
    .default("python")
    .describe("python or javascript"),
  /** Acceptance tests in the same language, run after the program; the task passes only if they pass. */
  tests: z.string().optional().describe("Acceptance tests in the same language, run after the program"),
  /** Files put read-only into the work dir of every attempt, by name: `{ path }` on the host or `{ content }`. */
  inputs: InputsSchema.default(() => ({})).describe("Input files by name: { path } or { content }"),
  /** Artifacts the task must produce, e.g. `["out/chart.png"]`; an attempt without them fails. */
  expect: ExpectedArtifactsSchema.default(() => []).describe("Files the program must write under out/"),
});
export type RunInput = z.input<typeof RunInputSchema>;

export const NoteSchema = z.object({
  /** The node that wrote it. */
  source: z.string(),
  attempt: z.number().int(),
  message: z.string(),
  /** Structured detail for programs that read the result. */
  data: z.unknown().optional(),
});
export type Note = z.infer<typeof NoteSchema>;

/**
 * What the critic decided after a verdict: repair, rewrite from scratch, or stop (and why). The
 * critic decides once; routing reads the decision and nothing recomputes it.
 */
export const DecisionSchema = z.discriminatedUnion("next", [
  z.object({ next: z.literal("fixer") }),
  /** A fresh rewrite, told which error kept coming back. */
  z.object({ next: z.literal("generator"), fingerprint: z.string() }),
  z.object({ next: z.literal("finish"), status: z.enum(RUN_STATUSES).exclude(["running"]), reason: z.string() }),
]);
export type Decision = z.infer<typeof DecisionSchema>;

/* Best of n: the candidates of a round (see core/candidates.ts). */

export const CANDIDATE_KINDS = ["fresh", "repair"] as const;

/** One candidate to write: its place in the round, and the budget it may spend. */
export const CandidateSpecSchema = z.object({
  /** The round, counted like `attempt`: the attempt this round's chosen program becomes. */
  round: z.number().int(),
  index: z.number().int(),
  /** `fresh`: the generator's prompt, as a new sample; `repair`: the fixer's, on the chosen program. */
  kind: z.enum(CANDIDATE_KINDS),
  /**
   * The budget this candidate sees, as a total: the tokens used before the round plus its share of
   * what was left. Reserved before the fan-out, so k calls made at once cannot overrun the budget.
   */
  tokenBudget: z.number().int(),
});
export type CandidateSpec = z.infer<typeof CandidateSpecSchema>;

/** One candidate as it came back: its program, its run, the verdict and what it did. */
export const CandidateOutcomeSchema = CandidateSpecSchema.omit({ tokenBudget: true }).extend({
  code: z.string(),
  /** False when the reply held no program (or the budget allowed no call): then nothing ran. */
  hasCode: z.boolean(),
  run: ExecutionSchema,
  passed: z.boolean(),
  /** The failure's type, or `passed`. */
  outcome: z.string(),
  /** As `best` scores: 100 for a pass, 10-90 by how far a failure got. */
  score: z.number(),
  /** Tokens its model call spent. */
  tokens: z.number().int(),
  /** A digest of what it did on the task's inputs (the tests' calls, or its output without tests). */
  behaviour: z.string(),
  /** That behaviour in a few words, for the fixer and the user. */
  shows: z.string(),
  /**
   * Why this candidate wrote nothing that could run: the budget share, the model, the inputs. The
   * round goes on with the others; when every candidate stopped, the run ends with the first reason.
   */
  stop: z
    .object({ status: z.enum(["budget_exhausted", "model_error", "invalid_input"]), reason: z.string() })
    .optional(),
});
export type CandidateOutcome = z.infer<typeof CandidateOutcomeSchema>;

export const CandidateGroupSchema = z.object({
  /** Candidate indexes (0-based) that behaved alike. */
  members: z.array(z.number().int()),
  shows: z.string(),
});
export type CandidateGroup = z.infer<typeof CandidateGroupSchema>;

/** How a round's candidates were chosen among; the result, the report and the CLI show `agreement`. */
export const CandidateChoiceSchema = z.object({
  round: z.number().int(),
  size: z.number().int(),
  chosen: z.number().int(),
  passed: z.number().int(),
  /** Largest first. */
  groups: z.array(CandidateGroupSchema),
  /** `3 of 4 candidates print the same`. */
  agreement: z.string(),
  /** How the groups differ, for the fixer; absent when they all agree or one passed. */
  disagreement: z.string().optional(),
});
export type CandidateChoice = z.infer<typeof CandidateChoiceSchema>;

/** A list channel that only grows: each update's items are added at the end. */
function appendOnlyList<Item extends z.ZodType>(item: Item) {
  return new ReducedValue(
    z.array(item).default(() => []),
    {
      inputSchema: z.array(item),
      reducer: (current: z.infer<Item>[], added: z.infer<Item>[]) => [...current, ...added],
    },
  );
}

/**
 * The `candidates` reducer: only the latest round is kept. Every checkpoint stores the channel
 * whole, so keeping every round would grow the store with rounds times candidates; each round's
 * outcomes stay in the checkpoints of that round.
 */
export function keepLatestRound(
  current: CandidateOutcome[] | undefined,
  added: CandidateOutcome[],
): CandidateOutcome[] {
  const all = [...(current ?? []), ...added];
  const latest = Math.max(...all.map((outcome) => outcome.round));
  const byIndex = new Map<number, CandidateOutcome>();
  for (const outcome of all) if (outcome.round === latest) byIndex.set(outcome.index, outcome);
  return [...byIndex.values()].sort((a, b) => a.index - b.index);
}

export const State = new StateSchema({
  ...RunInputSchema.shape,
  /** The current program. */
  code: z.string().default(""),
  /** Who wrote `code`, at what cost, and whether the reply held code at all. */
  draft: DraftSchema.optional(),
  /** How many programs have been executed so far. */
  attempt: z.number().int().default(0),
  /** The latest execution result. */
  lastRun: ExecutionSchema.optional(),
  /** The critic's verdict on the latest run. */
  critique: CritiqueSchema.optional(),
  /** Distinct errors seen in this run, one row per fingerprint. */
  errors: new ReducedValue(
    z.array(ErrorRecordSchema).default(() => []),
    {
      inputSchema: z.array(ErrorObservationSchema),
      reducer: mergeErrors,
    },
  ),
  /** One entry per executed attempt. */
  history: appendOnlyList(HistoryEntrySchema),
  /** Token ledger, in total and per node. */
  usage: new ReducedValue(UsageSchema.default(emptyUsage), {
    inputSchema: z.array(ModelCallUsageSchema),
    reducer: addUsage,
  }),
  /** The best attempt so far; a failed run still carries its best code here. Nodes propose, the reducer keeps the higher score. */
  best: new ReducedValue(BestAttemptSchema.optional(), {
    inputSchema: BestAttemptSchema.optional(),
    reducer: keepHigherScore<BestAttempt>,
  }),
  /** Files the kept attempt wrote under `out/`: name, size, sha256 and media type, never the bytes. */
  artifacts: new ReducedValue(KeptArtifactsSchema.optional(), {
    inputSchema: KeptArtifactsSchema.optional(),
    reducer: keepHigherScore<KeptArtifacts>,
  }),
  /** Reasons to fail an attempt other than the program's own errors, appended by any node. */
  objections: appendOnlyList(ObjectionSchema),
  /** Remarks from nodes that are worth showing the user but fail nothing, e.g. which written tests were dropped. */
  notes: appendOnlyList(NoteSchema),
  /** The latest round's candidates, each with its program, run and verdict (with `candidates` > 1). */
  candidates: new ReducedValue(z.array(CandidateOutcomeSchema).optional(), {
    inputSchema: z.array(CandidateOutcomeSchema),
    reducer: keepLatestRound,
  }),
  /** Which candidate the latest round kept, and how the candidates agreed. */
  candidateChoice: CandidateChoiceSchema.optional(),
  /** Calls the model proposed once per run (Python expressions) to tell failing candidates apart. */
  proposedInputs: z.array(z.string()).optional(),
  /** The critic's decision on the latest attempt. */
  decision: DecisionSchema.optional(),
  /** Fingerprints that already got their one fresh rewrite. */
  rewrittenFor: z.array(z.string()).default(() => []),
  /** `running` until the run ends, then why it ended. */
  status: z.enum(RUN_STATUSES).default("running"),
  /** A sentence on why the run ended. */
  reason: z.string().optional(),
  /** The node to run again when a run that stopped on a model error is resumed. */
  resumeFrom: z.string().optional(),
});

export type AgentState = typeof State.State;
export type AgentUpdate = typeof State.Update;

/**
 * The state after `update`, reduced as LangGraph reduces it: through each channel's own reducer
 * (State's `ReducedValue`s), or replaced. A node that decides from the state its update makes
 * (the critic's decision) reads it from here, so a changed reducer changes the decision with it.
 */
export function reducedState(state: AgentState, update: AgentUpdate): AgentState {
  const fields: Record<string, unknown> = State.fields;
  const reduced: Record<string, unknown> = { ...state };
  for (const [key, value] of Object.entries(update)) {
    // LangGraph writes nothing for a key whose value is undefined.
    if (value === undefined) continue;
    const field = fields[key];
    reduced[key] = ReducedValue.isInstance(field) ? field.reducer(reduced[key], value) : value;
  }
  return reduced as AgentState;
}

/** Objections raised against one attempt. */
export function objectionsFor(state: Pick<AgentState, "objections">, attempt: number): Objection[] {
  return state.objections.filter((objection) => objection.attempt === attempt);
}

/** The update a node returns to keep the current program from running, e.g. a static check. */
export function blockExecution(
  state: Pick<AgentState, "attempt">,
  source: string,
  finding: { type: string; message: string },
): AgentUpdate {
  return { objections: [{ attempt: state.attempt + 1, source, ...finding }] };
}

/** The update a node returns after execution to fail an attempt that ran cleanly. */
export function failAttempt(
  state: Pick<AgentState, "attempt">,
  source: string,
  finding: { type: string; message: string },
): AgentUpdate {
  return { objections: [{ attempt: state.attempt, source, ...finding }] };
}
