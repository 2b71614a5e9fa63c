import { BaseChatModel, type BaseChatModelParams } from "@langchain/core/language_models/chat_models";
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { messageText, type Sandbox } from "../internal.js";
import type { BenchmarkTask } from "./dataset.js";
import { type EffectiveMutant, type FindMutantsOptions, findEffectiveMutants } from "./mutants.js";
import { mapWithConcurrency } from "./pool.js";
import { withVisibleTestsOnly } from "./visible-tests.js";

/**
 * The label every report made with this model carries. Its pass rates measure the harness
 * (prompt, run, fail, fix, pass, report), never a language model's ability.
 */
export const SIMULATED_MODEL_NAME = "simulated";
export const SIMULATED_MODEL_LABEL =
  "SIMULATED MODEL: a script that answers each task with a mutant of the reference solution that fails the task's " +
  "docstring examples (chosen without the hidden tests), then with the reference solution once the fixer shows it that " +
  "program; a task without examples gets the reference at once. These figures test the harness; they are not a model's result.";

/** What the simulated model says for one task. */
export interface SimulatedScript {
  /** The task without its hidden tests: the script is never given them. */
  task: Omit<BenchmarkTask, "test">;
  /** The wrong first answer; absent when no mutant fails the visible examples, and the reference is sent at once. */
  mutant?: EffectiveMutant;
}

/** A fence longer than any backtick run in the code, so a docstring cannot close it early. */
function fenced(code: string): string {
  const longestRun = Math.max(0, ...(code.match(/`+/g) ?? []).map((run) => run.length));
  const fence = "`".repeat(Math.max(3, longestRun + 1));
  return `${fence}python\n${code.trimEnd()}\n${fence}`;
}

/**
 * A scripted chat model for the benchmark's own tests and demos. For each task it replies first
 * with one of the task's effective mutants (prompt + mutated body, a complete program), and once
 * the conversation shows that program (the fixer is repairing it) with the reference solution.
 *
 * The decision is read from the messages, not from a call counter, so it is safe under concurrent
 * tasks and gives the same answers however the runs interleave.
 */
export class SimulatedBenchmarkModel extends BaseChatModel {
  /** What the model knows per task: the prompt and reference, and its wrong answer; never the hidden tests. */
  readonly scripts: readonly SimulatedScript[];
  /** Every prompt received, in order: lets tests check what the model was (and was not) shown. */
  readonly prompts: BaseMessage[][] = [];

  constructor(scripts: readonly SimulatedScript[], params: BaseChatModelParams = {}) {
    super(params);
    // Longest prompt first, so a task whose prompt contains another's is matched correctly.
    this.scripts = [...scripts].sort((a, b) => b.task.prompt.length - a.task.prompt.length);
  }

  /**
   * Finds each task's mutants in the sandbox and builds the model. The wrong answer is a mutant
   * that changes behaviour on the task's docstring examples: the mutant search runs against the
   * visible examples only, so the script knows nothing the hidden tests would tell it.
   */
  static async forTasks(
    tasks: readonly BenchmarkTask[],
    sandbox: Sandbox,
    options: FindMutantsOptions & { concurrency?: number } = {},
  ): Promise<SimulatedBenchmarkModel> {
    const { concurrency = 2, ...mutantOptions } = options;
    const scripts = await mapWithConcurrency(tasks, concurrency, async (task): Promise<SimulatedScript> => {
      const { test: _hidden, ...known } = task;
      const visibleOnly = withVisibleTestsOnly(task);
      if (visibleOnly === null) return { task: known };
      const found = await findEffectiveMutants(visibleOnly, sandbox, { ...mutantOptions, maxMutants: 1 });
      const mutant = found.effective[0];
      return mutant === undefined ? { task: known } : { task: known, mutant };
    });
    return new SimulatedBenchmarkModel(scripts);
  }

  _llmType(): string {
    return SIMULATED_MODEL_NAME;
  }

  /** The program this model sends for `messages`, or null when no scripted task matches. */
  answer(messages: readonly BaseMessage[]): string | null {
    const conversation = messages.map(messageText).join("\n");
    const script = this.scripts.find((candidate) => conversation.includes(candidate.task.prompt.trim()));
    if (script === undefined) return null;
    const { task, mutant } = script;
    // The whole wrong program, not just its body: a mutated body can equal a helper already in
    // the prompt (HumanEval/50's decode with `+` is its encode), which would look "tried" at once.
    const alreadyTried = mutant !== undefined && conversation.includes((task.prompt + mutant.solution).trim());
    const body = mutant === undefined || alreadyTried ? task.canonical_solution : mutant.solution;
    return task.prompt + body;
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    this.prompts.push(messages);
    const program = this.answer(messages);
    const text =
      program === null
        ? "The simulated model has no script for this task, so it cannot answer."
        : `Here is the implementation.\n\n${fenced(program)}\n`;
    return { generations: [{ text, message: new AIMessage(text) }] };
  }
}
