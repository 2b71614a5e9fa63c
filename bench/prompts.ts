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
 * Run: npm run bench:prompts [-- --task HumanEval/0]
 */
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { loadDataset, buildHiddenTests, type BenchmarkTask } from "../src/benchmark/dataset.js";
import { generateMutantCandidates } from "../src/benchmark/mutants.js";
import { buildBenchmarkTask } from "../src/benchmark/run.js";
import { createAgent } from "../src/graph/index.js";
import { buildGeneratorPrompt } from "../src/nodes/generator.prompt.js";
import { assembleProgram } from "../src/tools/assemble.js";
import { createSandbox } from "../src/tools/sandbox/index.js";
import { ScriptedChatModel } from "../src/tools/scripted-model.js";
import { countMessageTokens } from "../src/tools/tokens.js";

const ATTEMPTS = 5;

function taskIdFromArgs(argv: readonly string[]): string {
  const index = argv.indexOf("--task");
  return index >= 0 && argv[index + 1] ? argv[index + 1]! : "HumanEval/0";
}

/**
 * Five wrong bodies, each failing with a different error class, so the agent repairs five
 * distinct failures instead of stopping early as stuck on a repeat.
 */
function failingBodies(task: BenchmarkTask): string[] {
  const firstParameter = /def\s+\w+\s*\(\s*(\w+)/.exec(task.prompt.slice(task.prompt.lastIndexOf(`def ${task.entry_point}`)))?.[1] ?? "x";
  const mutant = generateMutantCandidates(task.canonical_solution).find((candidate) => candidate.operator === "comparison");
  return [
    mutant?.solution ?? "    return None\n",
    `    return undefined_helper(${firstParameter})\n`,
    `    return ${firstParameter}[len(${firstParameter}) + 100]\n`,
    `    return ${firstParameter} + object()\n`,
    "    return 1 // 0\n",
  ];
}

const reply = (program: string) => `Here is the corrected implementation.\n\n\`\`\`python\n${program.trimEnd()}\n\`\`\`\n`;

async function main(): Promise<void> {
  const taskId = taskIdFromArgs(process.argv);
  const [task] = await loadDataset({ taskIds: [taskId] });
  if (!task) throw new Error(`no task ${taskId}`);
  const programs = failingBodies(task).map((body) => task.prompt + body);
  const replies = programs.map(reply);
  const tests = buildHiddenTests(task);
  const taskText = buildBenchmarkTask(task);
  const sandbox = createSandbox({ prewarm: ["python"] });

  try {
    // selfheal: the real agent, with a scripted model that records every prompt it is sent.
    const model = new ScriptedChatModel(replies);
    const state = await createAgent({ model, sandbox }).invoke(
      { task: taskText, language: "python", tests },
      { context: { maxAttempts: ATTEMPTS, tokenBudget: 1_000_000, model: "scripted" }, recursionLimit: 100 },
    );
    const selfheal = await Promise.all(model.prompts.map((messages) => countMessageTokens(messages)));

    // Full history: the tutorial's loop, replayed with the same replies and the real errors.
    const failures: string[] = [];
    for (const program of programs) {
      const result = await sandbox.run({ language: "python", code: assembleProgram(program, tests, "python").source, timeoutMs: 10_000 });
      failures.push(result.error ? `${result.error.type}: ${result.error.message}` : `status ${result.status}`);
    }
    const conversation: BaseMessage[] = buildGeneratorPrompt({ task: taskText, language: "python" });
    const fullHistory: number[] = [];
    for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
      fullHistory.push(await countMessageTokens(conversation));
      conversation.push(
        new AIMessage(replies[attempt]!),
        new HumanMessage(`Your solution failed the code execution test: ${failures[attempt]}`),
        new HumanMessage("Now, try again. Invoke the code tool to structure the output with a prefix, imports, and code block:"),
      );
    }

    const lines = [
      `Prompt tokens per attempt, ${task.task_id} (${task.entry_point}), a scripted run failing ${ATTEMPTS} times`,
      `selfheal run ended: ${state.status} after ${state.attempt} attempts; failures: ${state.history.map((entry) => entry.outcome).join(", ")}`,
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
    const full5 = fullHistory[ATTEMPTS - 1]!;
    if (at2 !== undefined && at5 !== undefined) {
      const growth = at5 / at2;
      const ratio = at5 / full5;
      lines.push(
        "",
        `selfheal attempt 5 / attempt 2: ${growth.toFixed(2)}x (target <= 1.2x: ${growth <= 1.2 ? "met" : "NOT met"})`,
        `selfheal / full history at attempt 5: ${ratio.toFixed(2)} (target <= 0.5: ${ratio <= 0.5 ? "met" : "NOT met"})`,
      );
    } else {
      lines.push("", `selfheal made only ${selfheal.length} model calls; the run did not reach attempt 5.`);
    }
    process.stdout.write(`${lines.join("\n")}\n`);
  } finally {
    const keepAlive = setInterval(() => undefined, 1_000);
    await sandbox.close();
    clearInterval(keepAlive);
  }
}

await main();
