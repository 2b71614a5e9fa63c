import { type Command, InvalidArgumentError, Option } from "commander";
import { DATASET_NAMES, FEEDBACK_MODES } from "../../benchmark/names.js";
import { STRATEGIES, type Strategy, settingDefaults } from "../../names.js";
import { addModelCallOptions, nonNegativeInteger, positiveInteger, sandboxOption } from "../options.js";
import { addQueueOptions } from "../queue-options.js";
import { addStoreOptions } from "../store-options.js";
import type { BenchFlags } from "./bench.js";
import { SUMMARIES } from "./summaries.js";

// What `selfheal bench` takes, declared with nothing heavy behind it (see run-command.ts).

/** `repair,resample,mixed`: the strategies to compare, the first the main run's. */
function strategyList(value: string): Strategy[] {
  const names = value.split(",").map((name) => name.trim());
  const unknown = names.find((name) => !(STRATEGIES as readonly string[]).includes(name));
  if (unknown !== undefined)
    throw new InvalidArgumentError(`expected ${STRATEGIES.join(", ")} or a comma list of them`);
  return names as Strategy[];
}

/** `selfheal bench`. */
export function registerBenchCommand(program: Command): Command {
  const defaults = settingDefaults();
  const command = program
    .command("bench")
    .description(SUMMARIES.bench)
    .option(
      "--dataset <name|file>",
      `${DATASET_NAMES.join(", ")}, or a HumanEval-format .jsonl / .jsonl.gz file`,
      "humaneval",
    )
    .option(
      "--dataset-dir <dir>",
      "where named datasets live (default the repository's datasets/, or $SELFHEAL_DATASET_DIR)",
    )
    .option("--limit <n>", "run only the first N tasks", positiveInteger)
    .option(
      "--tasks <ids>",
      "run only these tasks, comma-separated (HumanEval/0,HumanEval/5 or 0,5; Mbpp/2 or 2 with mbppplus)",
    )
    .option("--concurrency <n>", "tasks run at once", positiveInteger, 2)
    .option(
      "--max-attempts <n>",
      `programs executed per task before giving up (default ${defaults.maxAttempts})`,
      positiveInteger,
    )
    .option("--token-budget <n>", `tokens one task may spend (default ${defaults.tokenBudget})`, positiveInteger)
    .option("--timeout <ms>", `wall-clock limit per execution (default ${defaults.timeoutMs})`, positiveInteger)
    .option("-m, --model <name>", `model name (default ${defaults.model}; or set $SELFHEAL_MODEL)`)
    .option(
      "--temperature <t>",
      `sampling temperature (default ${defaults.temperature}; pass@k with --samples wants more, e.g. 0.8)`,
      Number,
    )
    .addOption(
      new Option(
        "--feedback <mode>",
        "what failed attempts learn from: visible (docstring examples, self-checks) or oracle (the hidden tests)",
      )
        .choices([...FEEDBACK_MODES])
        .default("visible"),
    )
    .option(
      "--samples <n>",
      "also draw N independent one-attempt samples per task: pass@k and resampling vs repair",
      nonNegativeInteger,
      0,
    )
    .option("--candidates <n>", "programs written and run in parallel per round (default 1)", positiveInteger)
    .option(
      "--strategy <list>",
      `after a failed round: ${STRATEGIES.join(", ")}; a comma list runs each task under each and draws one solved-vs-tokens curve each`,
      strategyList,
    )
    .option("--simulated", "use the scripted simulated model (tests the harness; no network, not a model result)")
    .option("--json <file>", "also write the full report as JSON")
    .option("--html <file>", "also write a self-contained HTML report with charts (no network needed to view it)")
    .option(
      "--verify-dataset",
      "no model: check that every reference solution passes and every behaviour-changing mutant fails",
    )
    .addOption(sandboxOption())
    .option("--queue", "hand the tasks to `selfheal worker`s through the queue, and gather the same report");
  return addQueueOptions(addStoreOptions(addModelCallOptions(command))).action(async (flags: BenchFlags) => {
    process.exitCode = await (await import("./bench.js")).benchAction(flags);
  });
}
