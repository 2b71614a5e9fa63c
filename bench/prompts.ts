/**
 * Prompt growth: how many prompt tokens each attempt of a failing run sends.
 *
 * One scripted five-attempt run on a real HumanEval task, each attempt failing differently, is
 * measured twice:
 * - selfheal: the agent itself runs it; its fixer rebuilds a compact prompt every time
 *   (task, current program, latest failure, one line per earlier error).
 * - full history: the loop from LangGraph's code-assistant tutorial, which appends every reply
 *   and every error message to one growing conversation and resends all of it.
 *
 * Both series use the same system prompt, task text and tokenizer. The full-history loop gets
 * only `Type: message` per failure, as the tutorial passes `str(e)`, while selfheal's fixer gets
 * the traceback: that favours the baseline, so the ratio is conservative.
 *
 * Run: npm run bench:prompts [-- --task HumanEval/0]   one task's series (HumanEval/0 by default)
 *      npm run bench:prompts -- --limit 20           the first 20 tasks, one line each, and medians
 */
import { AIMessage, type BaseMessage, HumanMessage } from "@langchain/core/messages";
import { type BenchmarkTask, buildHiddenTests, loadDataset } from "../src/benchmark/dataset.js";
import { findEffectiveMutants } from "../src/benchmark/mutants.js";
import { buildBenchmarkTask } from "../src/benchmark/task-input.js";
import { parseSettings } from "../src/core/settings.js";
import { createAgent } from "../src/graph/build.js";
import { buildGeneratorPrompt } from "../src/nodes/generator.prompt.js";
import { createSandbox, type Sandbox } from "../src/sandbox/index.js";
import { assembleProgram } from "../src/tools/assemble.js";
import { ScriptedChatModel } from "../src/tools/scripted-model.js";
import { countMessageTokens } from "../src/tools/tokens.js";

const ATTEMPTS = 5;

/**
 * Five wrong bodies, each failing with a different error class, so the agent repairs five
 * distinct failures instead of stopping early as stuck on a repeat. The first is an effective
 * mutant (checked in the sandbox), so it really fails the hidden tests.
 */
async function failingBodies(task: BenchmarkTask, sandbox: Sandbox): Promise<string[]> {
  const signature = task.prompt.slice(task.prompt.lastIndexOf(`def ${task.entry_point}`));
  const firstParameter = /def\s+\w+\s*\(\s*(\w+)/.exec(signature)?.[1] ?? "x";
  const [mutant] = (await findEffectiveMutants(task, sandbox, { maxMutants: 1 })).effective;
  return [
    mutant?.solution ?? "    return None\n",
    `    return undefined_helper(${firstParameter})\n`,
    `    return ${firstParameter}[len(${firstParameter}) + 100]\n`,
    `    return ${firstParameter} + object()\n`,
    "    return 1 // 0\n",
  ];
}

const reply = (program: string) =>
  `Here is the corrected implementation.\n\n\`\`\`python\n${program.trimEnd()}\n\`\`\`\n`;

interface PromptSeries {
  task: BenchmarkTask;
  /** Prompt tokens selfheal sent at attempts 1..5 (fewer if the run ended early). */
  selfheal: number[];
  fullHistory: number[];
  endedAs: string;
  failures: string[];
}

async function measure(task: BenchmarkTask, sandbox: Sandbox): Promise<PromptSeries> {
  const programs = (await failingBodies(task, sandbox)).map((body) => task.prompt + body);
  const replies = programs.map(reply);
  const tests = buildHiddenTests(task);
  const taskText = buildBenchmarkTask(task);

  // selfheal: the real agent, with a scripted model that records every prompt it is sent.
  const model = new ScriptedChatModel(replies);
  const state = await createAgent({ model, sandbox }).invoke(
    { task: taskText, language: "python", tests },
    { context: parseSettings({ maxAttempts: ATTEMPTS, tokenBudget: 1_000_000, model: "scripted" }) },
  );
  const selfheal = await Promise.all(model.prompts.map((messages) => countMessageTokens(messages)));

  // Full history: the tutorial's loop, replayed with the same replies and the real errors.
  const failures: string[] = [];
  for (const program of programs) {
    const result = await sandbox.run({
      language: "python",
      code: assembleProgram(program, tests, "python").source,
      timeoutMs: 10_000,
    });
    failures.push(result.error ? `${result.error.type}: ${result.error.message}` : `status ${result.status}`);
  }
  const conversation: BaseMessage[] = buildGeneratorPrompt({ task: taskText, language: "python" });
  const fullHistory: number[] = [];
  for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
    fullHistory.push(await countMessageTokens(conversation));
    conversation.push(
      new AIMessage(replies[attempt]!),
      new HumanMessage(`Your solution failed the code execution test: ${failures[attempt]}`),
      new HumanMessage(
        "Now, try again. Invoke the code tool to structure the output with a prefix, imports, and code block:",
      ),
    );
  }
  const endedAs = `${state.status} after ${state.attempt} attempts (${state.history.map((entry) => entry.outcome).join(", ")})`;
  return { task, selfheal, fullHistory, endedAs, failures };
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

function printSeries(series: PromptSeries): void {
  const { task, selfheal, fullHistory } = series;
  const lines = [
    `Prompt tokens per attempt, ${task.task_id} (${task.entry_point}), a scripted run failing ${ATTEMPTS} times`,
    `selfheal run ended: ${series.endedAs}`,
    "",
    "attempt  selfheal  full-history  selfheal/full",
  ];
  for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
    const ours = selfheal[attempt];
    const theirs = fullHistory[attempt]!;
    lines.push(
      `${String(attempt + 1).padStart(7)}  ${String(ours ?? "-").padStart(8)}  ${String(theirs).padStart(12)}  ${ours === undefined ? "-" : (ours / theirs).toFixed(2).padStart(13)}`,
    );
  }
  const at2 = selfheal[1];
  const at5 = selfheal[ATTEMPTS - 1];
  if (at2 !== undefined && at5 !== undefined) {
    const growth = at5 / at2;
    const ratio = at5 / fullHistory[ATTEMPTS - 1]!;
    lines.push(
      "",
      `selfheal attempt 5 / attempt 2: ${growth.toFixed(2)}x (target <= 1.2x: ${growth <= 1.2 ? "met" : "NOT met"})`,
      `selfheal / full history at attempt 5: ${ratio.toFixed(2)} (target <= 0.5: ${ratio <= 0.5 ? "met" : "NOT met"})`,
    );
  } else {
    lines.push("", `selfheal made only ${selfheal.length} model calls; the run did not reach attempt 5.`);
  }
  process.stdout.write(`${lines.join("\n")}\n`);
}

/** One line per task and the medians, for `--limit N`: one task's figures depend on its size. */
function printSummary(all: PromptSeries[]): void {
  const complete = all.filter((series) => series.selfheal.length >= ATTEMPTS);
  const lines = [
    `Prompt growth over ${all.length} tasks (${complete.length} reached attempt 5)`,
    "",
    "task            at2   at5  full@5  at5/at2  at5/full",
  ];
  const growths: number[] = [];
  const ratios: number[] = [];
  for (const { task, selfheal, fullHistory } of complete) {
    const growth = selfheal[ATTEMPTS - 1]! / selfheal[1]!;
    const ratio = selfheal[ATTEMPTS - 1]! / fullHistory[ATTEMPTS - 1]!;
    growths.push(growth);
    ratios.push(ratio);
    lines.push(
      `${task.task_id.padEnd(14)} ${String(selfheal[1]).padStart(5)} ${String(selfheal[ATTEMPTS - 1]).padStart(5)} ${String(fullHistory[ATTEMPTS - 1]).padStart(7)} ${growth.toFixed(2).padStart(8)} ${ratio.toFixed(2).padStart(9)}`,
    );
  }
  if (complete.length > 0) {
    lines.push(
      "",
      `median at5/at2: ${median(growths).toFixed(2)}x (max ${Math.max(...growths).toFixed(2)}); target <= 1.2x`,
      `median at5/full: ${median(ratios).toFixed(2)} (min ${Math.min(...ratios).toFixed(2)}, max ${Math.max(...ratios).toFixed(2)}); target <= 0.5`,
    );
  }
  process.stdout.write(`${lines.join("\n")}\n`);
}

function flag(argv: readonly string[], name: string): string | undefined {
  const index = argv.indexOf(name);
  return index >= 0 ? argv[index + 1] : undefined;
}

async function main(): Promise<void> {
  const limit = flag(process.argv, "--limit");
  const tasks =
    limit === undefined
      ? await loadDataset({ taskIds: [flag(process.argv, "--task") ?? "HumanEval/0"] })
      : await loadDataset({ limit: Number(limit) });
  const sandbox = createSandbox({ prewarm: ["python"] });
  try {
    const all: PromptSeries[] = [];
    for (const task of tasks) all.push(await measure(task, sandbox));
    if (all.length === 1) printSeries(all[0]!);
    else printSummary(all);
  } finally {
    // close() waits for unreferenced interpreters; keep the loop alive until it is done.
    const keepAlive = setInterval(() => undefined, 1_000);
    await sandbox.close();
    clearInterval(keepAlive);
  }
}

await main();
