import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { AIMessage } from "@langchain/core/messages";
import { isGraphBubbleUp } from "@langchain/langgraph";
import { decideAfterCritic } from "../core/policy.js";
import type { Settings } from "../core/settings.js";
import {
  type AgentState,
  type AgentUpdate,
  addUsage,
  type Critique,
  type ErrorObservation,
  type Execution,
  type HistoryEntry,
  type ModelCallUsage,
  mergeErrors,
  objectionsFor,
} from "../core/state.js";
import { planPromptCall } from "../tools/budget.js";
import { fingerprintError, hashCode } from "../tools/fingerprint.js";
import { describeError, describeModelFailure, modelEndpoint } from "../tools/model-errors.js";
import { invokeWithinLimits } from "../tools/models.js";
import { countTokens } from "../tools/tokens.js";
import { artifactObjections, keepBestArtifacts } from "./artifact-check.js";
import { buildReviewPrompt, type Review, ReviewSchema } from "./critic.prompt.js";
import { PACKAGE_FINDINGS } from "./install-packages.js";
import type { AgentNode, NodeDeps } from "./types.js";

export interface Failure {
  type: string;
  message: string;
}

export interface Judgement {
  critique: Critique;
  failure?: Failure;
}

function failed(failure: Failure, summary: string, diagnosis: string): Judgement {
  return { failure, critique: { passed: false, summary, diagnosis } };
}

/** The verdict that needs no model: exit status, exceptions, limits and the acceptance tests. */
export function judgeRun(run: Execution, hasTests: boolean): Judgement {
  const where = run.failedInTests ? "in the acceptance tests" : "in the program";
  switch (run.status) {
    case "ok":
      return {
        critique: {
          passed: true,
          summary: hasTests ? "The program ran cleanly and the acceptance tests passed." : "The program ran cleanly.",
          diagnosis: "",
        },
      };
    case "timeout":
      return failed(
        { type: "Timeout", message: "the program did not finish within the time limit" },
        `Timed out after ${Math.round(run.durationMs)} ms.`,
        "Look for an infinite loop, a read that waits for input, or work that grows too fast for the input size.",
      );
    case "memory_limit":
      return failed(
        { type: "MemoryLimit", message: "the program ran out of memory" },
        "Killed at the memory limit.",
        "Something grows without bound: an ever-growing list, unbounded recursion or a huge allocation.",
      );
    case "output_limit":
      return failed(
        { type: "OutputLimit", message: "the program printed more than the output limit" },
        "Stopped for printing too much.",
        "Print less: a loop probably prints on every iteration or never ends.",
      );
    case "unavailable":
      return failed(
        { type: "SandboxUnavailable", message: run.stderr.trim() || "the sandbox could not run the program" },
        "The sandbox was unavailable.",
        "The program did not run; this is an environment problem, not a bug in the code.",
      );
    default:
      break;
  }
  if (run.error) {
    const at = run.error.line ? ` at line ${run.error.line} ${where}` : ` ${where}`;
    const assertion = /Assertion/i.test(run.error.type);
    const packageFinding = (PACKAGE_FINDINGS as readonly string[]).includes(run.error.type);
    const diagnosis = packageFinding
      ? run.error.message
      : assertion
        ? `An assertion failed${at}: the program computes a wrong result for that case. Fix the logic, not the check, unless the check contradicts the task.`
        : `Raised${at}.`;
    return failed(
      { type: run.error.type, message: run.error.message },
      `${run.error.type}: ${run.error.message}`,
      diagnosis,
    );
  }
  if (run.status === "killed") {
    return failed(
      { type: "Killed", message: `killed by ${run.signal ?? "a signal"}` },
      `Killed by ${run.signal ?? "a signal"}.`,
      "The process was killed: it may have hit a resource limit (processes, file size, CPU time).",
    );
  }
  const lastLine = run.stderr.trim().split("\n").at(-1) ?? "";
  return failed(
    { type: "NonZeroExit", message: `exited with code ${run.exitCode}${lastLine ? `: ${lastLine}` : ""}` },
    `Exited with code ${run.exitCode}.`,
    lastLine
      ? `The last line on stderr was: ${lastLine}`
      : "The program exited with a failure status and printed no error.",
  );
}

/** 100 for a pass; a failure scores by how far through the program and tests it got. */
export function scoreAttempt(run: Execution, passed: boolean): number {
  if (passed) return 100;
  if (run.progress !== null) return 10 + Math.round(80 * run.progress);
  if (run.error?.type === "NoCodeError") return 0;
  return 5;
}

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
    const review = ReviewSchema.parse(parsed);
    const reported = raw?.usage_metadata;
    // Some OpenAI-compatible servers send zero usage, which the client turns into empty fields.
    const usage =
      reported && reported.input_tokens + reported.output_tokens > 0
        ? { node: "critic", inputTokens: reported.input_tokens, outputTokens: reported.output_tokens }
        : { node: "critic", inputTokens: plan.promptTokens, outputTokens: await countTokens(JSON.stringify(review)) };
    return { review, usage };
  } catch (error) {
    if (isGraphBubbleUp(error)) throw error;
    // Garbage is a model fault too, not a rejection: failing the attempt would send a program that
    // may well be right to the fixer with no defect to fix, and blame the program for the
    // reviewer. model_error says who failed, keeps the checkpoint, and resume asks again (with
    // another criticModel if this one cannot answer in the schema).
    // An unreadable review is the model's answer, not the server's fault: its own error says most.
    const reason = isUnreadableReview(error)
      ? `returned no readable review (LLM review): ${describeError(error)}`
      : `failed (LLM review): ${describeModelFailure(error, { endpoint: modelEndpoint(model), timeoutMs: settings.modelTimeoutMs })}`;
    return { stop: { status: "model_error", reason: `The critic model call ${reason}`, resumeFrom: "critic" } };
  }
}

/** Decides pass or fail, fingerprints the failure, and keeps the ledger of attempts and the best one. */
export function createCriticNode(deps: NodeDeps): AgentNode {
  return async (state, runtime) => {
    const settings = runtime.context;
    const run = state.lastRun;
    if (!run) throw new Error("critic reached without an execution result; check the graph's edges");

    let { critique, failure } = judgeRun(run, Boolean(state.tests?.trim()));
    const artifactFindings = critique.passed ? artifactObjections(state.expect, run, state.attempt) : [];
    const [objection] = critique.passed ? [...objectionsFor(state, state.attempt), ...artifactFindings] : [];
    if (objection) {
      failure = { type: objection.type, message: objection.message };
      critique = {
        passed: false,
        summary: `${objection.source}: ${objection.type}: ${objection.message}`,
        diagnosis: objection.message,
      };
    }
    const usage: ModelCallUsage[] = [];
    if (critique.passed && settings.llmReview && !state.tests?.trim()) {
      const outcome = await reviewWithModel(
        () => deps.resolveModel("critic", settings),
        state,
        run,
        settings,
        runtime.signal,
      );
      // Nothing of this attempt is booked yet, so resuming at the critic judges it once, not twice.
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
    const entry: HistoryEntry = {
      attempt: state.attempt,
      node: state.draft?.author ?? "generator",
      codeHash: hashCode(ran ? state.code : ""),
      outcome: failure ? failure.type : "passed",
      fingerprint,
      tokens: (state.draft?.tokens ?? 0) + reviewTokens,
      ...(run.installed ? { installed: run.installed } : {}),
    };
    const observed: ErrorObservation[] =
      failure && fingerprint ? [{ fingerprint, ...failure, attempt: state.attempt }] : [];
    // The policy reads the state as it will be after this update, so it is decided here, once.
    const decision = decideAfterCritic(
      {
        critique,
        attempt: state.attempt,
        usage: addUsage(state.usage, usage),
        history: [...state.history, entry],
        errors: mergeErrors(state.errors, observed),
        rewrittenFor: state.rewrittenFor,
      },
      settings,
    );
    const update: AgentUpdate = { critique, usage, history: [entry], errors: observed, decision };
    if (artifactFindings.length > 0) update.objections = artifactFindings;
    const isBest = !state.best || score >= state.best.score;
    if (isBest) update.best = { attempt: state.attempt, code: ran ? state.code : (state.best?.code ?? ""), score };
    const artifacts = await keepBestArtifacts(state.artifacts, run, state.attempt, isBest);
    if (artifacts) update.artifacts = artifacts;
    if (decision.next === "finish") {
      update.status = decision.status;
      update.reason = decision.reason;
    }
    return update;
  };
}
