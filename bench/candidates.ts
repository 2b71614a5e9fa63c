/**
 * Best of n, wall time: a model that answers after a fixed latency, and a task only the last of
 * four programs solves. Repair writes them one after another (four attempts, four latencies);
 * four candidates in one round write them at once (one latency). Figures side by side, no bound.
 *
 * Run: npm run bench:candidates [-- --latency-ms 1000 --repeat 3]
 */
import { setTimeout as sleep } from "node:timers/promises";
import { createAgent, createSandbox, ScriptedChatModel } from "../src/index.js";

const args = process.argv.slice(2);
const flag = (name: string, fallback: number) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? Number(args[at + 1]) : fallback;
};
const latencyMs = flag("latency-ms", 1000);
const repeat = flag("repeat", 3);

const fence = (body: string) => `\`\`\`python\ndef square(x):\n    ${body}\n\`\`\``;
const replies = ["return x + x", "return x ** 3", "return -x", "return x * x"].map(fence);
const tests = "assert square(2) == 4\nassert square(3) == 9\n";

/** The scripted replies, each after `latencyMs`, as a remote model would take. */
class SlowModel extends ScriptedChatModel {
  override async _generate(...params: Parameters<ScriptedChatModel["_generate"]>) {
    await sleep(latencyMs);
    return super._generate(...params);
  }
}

const sandbox = createSandbox({ kind: "process", prewarm: ["python"] });
const rows: Array<[string, number[], number, number]> = [];
for (const [label, context] of [
  ["repair, 1 candidate", { candidates: 1, maxAttempts: 4, repeatLimit: 5 }],
  ["4 candidates, one round", { candidates: 4 }],
] as const) {
  const times: number[] = [];
  let attempts = 0;
  let calls = 0;
  for (let run = 0; run < repeat; run++) {
    const model = new SlowModel(replies);
    const started = performance.now();
    const result = await createAgent({ model, sandbox }).invoke({ task: "Write square(x).", tests }, { context });
    times.push(performance.now() - started);
    if (result.status !== "passed") throw new Error(`${label}: the run ended ${result.status}`);
    attempts = result.attempt;
    calls = model.prompts.length;
  }
  rows.push([label, times, attempts, calls]);
}
await sandbox.close();

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
console.log(`model latency ${latencyMs} ms, ${repeat} runs each; the fourth program is the first that passes`);
console.log("contender                  median wall ms  attempts  model calls");
for (const [label, times, attempts, calls] of rows)
  console.log(
    `${label.padEnd(26)} ${median(times).toFixed(0).padStart(14)}  ${String(attempts).padStart(8)}  ${String(calls).padStart(11)}`,
  );
