import { readFileSync } from "node:fs";
import { join } from "node:path";
import { MemorySaver } from "@langchain/langgraph";
import { afterAll, describe, expect, it } from "vitest";
import {
  createAgent,
  createSandbox,
  describeStatus,
  parseSettings,
  planResume,
  ScriptedChatModel,
  stepsLeft,
} from "../../src/internal.js";
import { fence } from "../helpers/helpers.js";
import { scratchDir } from "../helpers/scratch.js";

// LangGraph saves a node's writes as soon as it returns, and its step's checkpoint after it. A
// worker killed between the two leaves a head whose `next` is empty though the run never ended:
// the queue once reported such a thread "finished" with status `running` (CI, session 9).

/** Stands for a process killed while writing its `dieAt`-th checkpoint: that write never lands. */
class DyingSaver extends MemorySaver {
  private puts = 0;
  constructor(private readonly dieAt: number) {
    super();
  }
  override async put(...args: Parameters<MemorySaver["put"]>) {
    if (++this.puts === this.dieAt) throw new Error("killed before the checkpoint was written");
    return super.put(...args);
  }
}

const sandbox = createSandbox({ kind: "process" });
afterAll(() => sandbox.close());

/** Each program appends a line to `log`, so the test counts how often each attempt really ran. */
const program = (log: string, body: string) =>
  fence(`with open(${JSON.stringify(log)}, "a") as log:\n    log.write("ran\\n")\n${body}`);

// The checkpoint each kill stops before, and where the thread then stands, written down from the
// graph's order: start, generator, executor, critic (fails), fixer, executor, critic (passes), finish.
const KILLS = [
  { dieAt: 2, status: "unfinished (next: after __start__)" },
  { dieAt: 3, status: "unfinished (next: after generator)" },
  { dieAt: 4, status: "unfinished (next: after executor)" },
  { dieAt: 5, status: "unfinished (next: after critic)" },
  { dieAt: 6, status: "unfinished (next: after fixer)" },
  { dieAt: 7, status: "unfinished (next: after executor)" },
  // The critic has passed the run; only `finish` is left to tidy up.
  { dieAt: 8, status: "passed" },
];

describe("a thread killed after a step's writes were saved and before its checkpoint", () => {
  it.each(KILLS)(
    "killed at checkpoint $dieAt: reads $status, resumes, and repeats no step",
    async ({ dieAt, status }) => {
      const log = join(scratchDir("unsaved-step"), "executions.log");
      const model = new ScriptedChatModel([program(log, "print(10 / 0)"), program(log, "print(10 / 2)")]);
      const agent = createAgent({ model, sandbox, checkpointer: new DyingSaver(dieAt) });
      const config = {
        configurable: { thread_id: `killed-${dieAt}` },
        context: parseSettings({ sandbox: "process" }),
        durability: "sync" as const,
      };
      await expect(agent.invoke({ task: "Print ten halved." }, config)).rejects.toThrow(/killed before the checkpoint/);

      const head = await agent.getState(config);
      expect(head.next).toEqual([]);
      expect(stepsLeft(head)).toHaveLength(1);
      expect(describeStatus(head)).toBe(status);
      const plan = planResume(head, agent);
      if ("finished" in plan) throw new Error(`planResume called the thread finished: ${plan.finished.status}`);

      const resumed = await agent.invoke(plan.start, config);
      expect(resumed).toMatchObject({ status: "passed", attempt: 2 });
      expect(model.prompts).toHaveLength(2);
      expect(readFileSync(log, "utf8")).toBe("ran\nran\n");
      const end = await agent.getState(config);
      expect(stepsLeft(end)).toEqual([]);
      expect(planResume(end, agent)).toMatchObject({ finished: { status: "passed" } });
    },
  );
});
