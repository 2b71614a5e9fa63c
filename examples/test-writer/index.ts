import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { AgentUpdate, ExtraStep } from "../../src/index.js";
import { planPromptCall } from "../../src/tools/budget.js";
import { extractCode } from "../../src/tools/extract-code.js";
import { callModel } from "../../src/tools/models.js";
import { ANALYZER_SOURCE } from "./analyze.js";
import { buildTestWriterPrompt } from "./prompt.js";

export interface TestWriterOptions {
  /** The model that writes the tests; the agent's generator model when absent. */
  model?: BaseChatModel;
  maxTests?: number;
}

export interface DroppedTest {
  test: string;
  reason: string;
}

const SOURCE = "testWriter";

/**
 * A step before the first execution, in the spirit of AgentCoder: a model writes extra tests from
 * the task description, they run with the program after the task's own tests, and any that
 * contradict the task's tests are dropped and reported in `notes`.
 */
export function testWriter(options: TestWriterOptions = {}): ExtraStep {
  return {
    name: SOURCE,
    create: (deps) => async (state, config) => {
      const alreadyWritten = state.notes.some((note) => note.source === SOURCE);
      if (state.language !== "python" || state.attempt > 0 || alreadyWritten) return {};
      const settings = config.context;
      const model = options.model ?? deps.resolveModel("generator", settings);
      const messages = buildTestWriterPrompt(state.task, options.maxTests ?? 8);
      const note = (message: string, data?: unknown): AgentUpdate["notes"] => [
        { source: SOURCE, attempt: state.attempt + 1, message, data },
      ];

      const plan = await planPromptCall(messages, {
        usedTokens: state.usage.totalTokens,
        tokenBudget: settings.tokenBudget,
        maxOutputTokens: Math.min(settings.maxOutputTokens, 1024),
      });
      if (!plan.ok) return { notes: note("skipped: no token budget left for writing tests") };
      const reply = await callModel(model, messages, SOURCE, {
        outputCap: plan.outputCap,
        timeoutMs: settings.modelTimeoutMs,
        signal: config.signal,
        promptTokens: plan.promptTokens,
      });
      const written = extractCode(reply.text, "python");
      if (written.code === null) return { usage: [reply.usage], notes: note(`wrote no tests: ${written.problem}`) };

      const analysis = await deps.getSandbox(settings.sandbox).run({
        language: "python",
        code: ANALYZER_SOURCE,
        files: { "task_tests.py": state.tests ?? "", "written_tests.py": written.code },
        timeoutMs: 5000,
      });
      if (analysis.status !== "ok")
        return {
          usage: [reply.usage],
          notes: note(`could not analyse the written tests: ${analysis.error?.message ?? analysis.status}`),
        };
      const { kept, dropped } = JSON.parse(analysis.stdout) as { kept: string[]; dropped: DroppedTest[] };
      const tests =
        kept.length > 0
          ? [state.tests?.trimEnd(), `# ---- tests written by ${SOURCE} ----`, ...kept].filter(Boolean).join("\n") +
            "\n"
          : state.tests;
      const summary = `wrote ${kept.length + dropped.length} tests, kept ${kept.length}, dropped ${dropped.length}${dropped.map((entry) => `\n  dropped (${entry.reason}): ${entry.test}`).join("")}`;
      return { tests, usage: [reply.usage], notes: note(summary, { kept, dropped }) };
    },
  };
}
