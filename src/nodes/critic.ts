import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { AIMessage } from "@langchain/core/messages";
import { isGraphBubbleUp } from "@langchain/langgraph";
import type { ErrorObservation, HistoryEntry, ModelCallUsage } from "../core/ledger.js";
import { decideAfterCritic } from "../core/policy.js";
import type { Settings } from "../core/settings.js";
import { type AgentState, type AgentUpdate, type Execution, objectionsFor, reducedState } from "../core/state.js";
import { scoreAttempt } from "../core/verdict.js";
import { planPromptCall } from "../tools/budget.js";
import { fingerprintError, hashCode } from "../tools/fingerprint.js";
import { describeError, describeModelFailure, modelEndpoint } from "../tools/model-errors.js";
import { invokeWithinLimits } from "../tools/models.js";
import { countTokens, messageText } from "../tools/tokens.js";
import { judgeWithArtifacts, proposedArtifacts } from "./artifact-check.js";
import { buildReviewPrompt, type Review, ReviewSchema } from "./critic.prompt.js";
import type { AgentNode, NodeDeps } from "./types.js";

export type { Failure, Judgement } from "../core/verdict.js";

/**
 * With `llmReview` on, a clean run passes only on the reviewer's word: a review that cannot be had
 * stops the run (`stop`) instead of passing it unreviewed.
 */
type ReviewOutcome = { review: Review; usage: ModelCallUsage } | { stop: AgentUpdate };

/**
 * A reply that arrived but is not a review: invalid JSON (the openai SDK parses json_schema replies
 * itself and throws SyntaxError), or JSON that does not fit the schema (a ZodError, from the SDK's
 * zod copy or ours). Anything else is a failed call: HTTP errors, refused connections, timeouts.
 */
function isUnreadableReview(error: unknown): boolean {
  return (
    error instanceof Error &&
    (error instanceof SyntaxError || /ZodError$/.test(error.name) || error.name === "OutputParserException")
  );
}

/**
 * A review call that was answered, but not with a review: the call is booked (it was made and
 * answered), and the reason says in one line what the answer lacks.
 */
function unreadableReview(problem: unknown, usage: ModelCallUsage): ReviewOutcome {
  const issues = (problem as { issues?: unknown } | null)?.issues;
  const detail = Array.isArray(issues)
    ? issues
        .map(
          (issue: { path?: unknown[]; message?: string }) =>
            `${issue.path?.join(".") || "the reply"}: ${issue.message}`,
        )
        .join("; ")
    : typeof problem === "string"
      ? problem
      : describeError(problem);
  return {
    stop: {
      status: "model_error",
      reason: `The critic model call returned no readable review (LLM review): ${detail}`,
      resumeFrom: "critic",
      usage: [usage],
    },
  };
}

async function reviewWithModel(
  getModel: () => BaseChatModel,
  state: AgentState,
  run: Execution,
  settings: Settings,
  signal?: AbortSignal,
): Promise<ReviewOutcome> {
  const messages = buildReviewPrompt({ task: state.task, language: state.language, code: state.code, run });
  const plan = await planPromptCall(messages, {
    usedTokens: state.usage.totalTokens,
    tokenBudget: settings.tokenBudget,
    maxOutputTokens: Math.min(settings.maxOutputTokens, 512),
  });
  // The user asked for a review; a clean run nobody reviewed is not a pass. The budget is spent,
  // so the run ends as the writers end it; the program is in `code` and its run in `lastRun`.
  if (!plan.ok)
    return {
      stop: {
        status: "budget_exhausted",
        reason: `${plan.reason} The program ran cleanly but was not reviewed (llmReview is on), so the run does not pass.`,
      },
    };
  let model: BaseChatModel | undefined;
  try {
    model = getModel();
    const limits = { outputCap: plan.outputCap, timeoutMs: settings.modelTimeoutMs, signal };
    const result = (await invokeWithinLimits(model, limits, (limited, callSignal) =>
      limited.withStructuredOutput(ReviewSchema, { includeRaw: true }).invoke(messages, { signal: callSignal }),
    )) as { raw?: AIMessage; parsed?: Review } | Review;
    const parsed = "parsed" in result ? result.parsed : (result as Review);
    const raw = "raw" in result ? result.raw : undefined;
    const reported = raw?.usage_metadata;
    // Some OpenAI-compatible servers send zero usage, which the client turns into empty fields.
    const usage: ModelCallUsage =
      reported && reported.input_tokens + reported.output_tokens > 0
        ? { node: "critic", inputTokens: reported.input_tokens, outputTokens: reported.output_tokens }
        : {
            node: "critic",
            inputTokens: await plan.promptTokens(),
            outputTokens: await countTokens(raw ? messageText(raw) : JSON.stringify(parsed ?? "")),
          };
    const review = ReviewSchema.safeParse(parsed);
    if (review.success) return { review: review.data, usage };
    return unreadableReview(parsed == null ? "the reply is not JSON in the review's schema" : review.error, usage);
  } catch (error) {
    if (isGraphBubbleUp(error)) throw error;
    // Garbage is a model fault too, not a rejection: failing the attempt would send a program that
    // may well be right to the fixer with no defect to fix, and blame the program for the
    // reviewer. model_error says who failed, keeps the checkpoint, and resume asks again (with
    // another criticModel if this one cannot answer in the schema).
    // An unreadable review is the model's answer, not the server's fault: its own error says most.
    if (isUnreadableReview(error)) {
      // The client threw the reply away when it did not parse: its prompt is counted, its answer cannot be.
      return unreadableReview(error, { node: "critic", inputTokens: await plan.promptTokens(), outputTokens: 0 });
    }
    const reason = describeModelFailure(error, { endpoint: modelEndpoint(model), timeoutMs: settings.modelTimeoutMs });
    return {
      stop: {
        status: "model_error",
        reason: `The critic model call failed (LLM review): ${reason}`,
        resumeFrom: "critic",
      },
    };
  }
}

/** The artifact folders of a round's candidates that were not chosen, for the run's end to remove. */
function otherCandidateFolders(state: AgentState): { otherFolders?: string[] } {
  if (state.candidateChoice?.round !== state.attempt) return {};
  const folders = (state.candidates ?? [])
    .filter((outcome) => outcome.round === state.attempt && outcome.index !== state.candidateChoice?.chosen)
    .flatMap((outcome) => (outcome.run.artifacts?.folder ? [outcome.run.artifacts.folder] : []));
  return folders.length > 0 ? { otherFolders: folders } : {};
}

/**
 * Asks the verdict (a pure function of the run and the findings), asks the LLM review when it is
 * on, and books the attempt: history, errors, usage, and a proposal for `best` and `artifacts`
 * that their reducers keep or drop. Nothing on disk changes here; the run's end keeps artifacts.
 */
export function createCriticNode(deps: NodeDeps): AgentNode {
  return async (state, runtime) => {
    const settings = runtime.context;
    const run = state.lastRun;
    if (!run) throw new Error("critic reached without an execution result; check the graph's edges");

    const hasTests = Boolean(state.tests?.trim());
    const judged = judgeWithArtifacts({
      run,
      hasTests,
      expect: state.expect,
      attempt: state.attempt,
      findings: objectionsFor(state, state.attempt),
    });
    const { artifactFindings } = judged;
    let { critique, failure } = judged;
    const usage: ModelCallUsage[] = [];
    if (critique.passed && settings.llmReview && !hasTests) {
      const outcome = await reviewWithModel(
        () => deps.resolveModel("critic", settings),
        state,
        run,
        settings,
        runtime.signal,
      );
      // Only the review call itself is booked, so resuming at the critic judges the attempt once, not twice.
      if ("stop" in outcome) return outcome.stop;
      usage.push(outcome.usage);
      if (!outcome.review.passed) {
        failure = {
          type: "ReviewRejected",
          message: outcome.review.reasons.join("; ") || "the reviewer rejected the program",
        };
        critique = {
          passed: false,
          summary: `Review: ${failure.message}`,
          diagnosis: outcome.review.fixHint || failure.message,
        };
      }
    }

    const fingerprint = failure ? fingerprintError(failure.type, failure.message) : undefined;
    const ran = state.draft?.hasCode !== false;
    const reviewTokens = usage.reduce((sum, call) => sum + call.inputTokens + call.outputTokens, 0);
    const score = scoreAttempt(run, critique.passed);
    const folder = run.artifacts?.folder ?? undefined;
    const entry: HistoryEntry = {
      attempt: state.attempt,
      node: state.draft?.author ?? "generator",
      codeHash: hashCode(ran ? state.code : ""),
      outcome: failure ? failure.type : "passed",
      fingerprint,
      tokens: (state.draft?.tokens ?? 0) + reviewTokens,
      score,
      ...(folder ? { artifactsFolder: folder } : {}),
      ...(run.installed ? { installed: run.installed } : {}),
      ...otherCandidateFolders(state),
    };
    const observed: ErrorObservation[] =
      failure && fingerprint ? [{ fingerprint, ...failure, attempt: state.attempt }] : [];
    const update: AgentUpdate = {
      critique,
      usage,
      history: [entry],
      errors: observed,
      best: { attempt: state.attempt, code: ran ? state.code : (state.best?.code ?? ""), score },
    };
    if (artifactFindings.length > 0) update.objections = artifactFindings;
    const kept = proposedArtifacts(run, state.attempt, score);
    if (kept) update.artifacts = kept;
    // The policy reads the state as the channels' own reducers will make it from this update.
    const decision = decideAfterCritic(reducedState(state, update), settings);
    update.decision = decision;
    if (decision.next === "finish") {
      update.status = decision.status;
      update.reason = decision.reason;
    }
    return update;
  };
}
