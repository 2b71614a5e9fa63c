import { Command, MemorySaver } from "@langchain/langgraph";
import { afterAll, describe, expect, it } from "vitest";
import { createAgent, createSandbox, parseSettings, ScriptedChatModel } from "../../src/index.js";
import { driveRun, type RunEvent, runEvents } from "../../src/internal.js";
import { fence } from "../helpers/helpers.js";

const sandbox = createSandbox({ kind: "process" });
afterAll(() => sandbox.close());

async function collect(events: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const all: RunEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

describe("runEvents, the one stream loop of every front end", () => {
  it("says each step's nodes with its state, each node's update, and the program's lines as they come", async () => {
    const agent = createAgent({
      model: new ScriptedChatModel([fence("print('one')\nraise SystemExit(2)"), fence("print('two')")]),
      sandbox,
    });
    const events = await collect(
      runEvents(agent, { task: "Print two." }, { context: parseSettings({}), output: true, tasks: true }),
    );
    const steps = events.flatMap((event) => (event.kind === "state" ? [event.nodes.join(",")] : []));
    // The first state is the input's, which no node made; finish changes no state, so no state follows it.
    expect(steps).toEqual(["", "generator", "executor", "critic", "fixer", "executor", "critic"]);
    const updated = events.flatMap((event) => (event.kind === "updated" ? [event.node] : []));
    expect(updated).toEqual([...steps.filter(Boolean), "finish"]);
    const started = events.flatMap((event) => (event.kind === "started" ? [event.node] : []));
    expect(started).toEqual(updated);
    const lines = events.flatMap((event) => (event.kind === "output" ? [event.event.line] : []));
    expect(lines).toEqual(expect.arrayContaining(["one", "two"]));
    const states = events.flatMap((event) => (event.kind === "state" ? [event.state] : []));
    expect(states.at(-1)?.status).toBe("passed");
  });

  it("says where a run pauses for approval, with what it asks", async () => {
    const agent = createAgent({
      model: new ScriptedChatModel([fence("print('waiting')")]),
      sandbox,
      checkpointer: new MemorySaver(),
    });
    const events = await collect(
      runEvents(agent, { task: "Print waiting." }, { context: parseSettings({ approval: true }), threadId: "paused" }),
    );
    const paused = events.filter((event) => event.kind === "paused");
    expect(paused).toHaveLength(1);
    expect(paused[0]).toMatchObject({ kind: "paused", request: { attempt: 1, code: "print('waiting')\n" } });
    // Without `output` and `tasks`, neither kind comes.
    expect(events.some((event) => event.kind === "output" || event.kind === "started")).toBe(false);
  });
});

describe("driveRun, the run loop every front end calls", () => {
  it("hands each event on and says where the run stopped: ended, or paused with its request", async () => {
    const agent = createAgent({
      model: new ScriptedChatModel([fence("print('waiting')")]),
      sandbox,
      checkpointer: new MemorySaver(),
    });
    const context = parseSettings({ approval: true });
    const seen: string[] = [];
    const paused = await driveRun(agent, { task: "Print waiting." }, { context, threadId: "drive" }, (event) => {
      seen.push(event.kind);
    });
    expect(paused).toMatchObject({ paused: true, request: { attempt: 1, code: "print('waiting')\n" } });
    // The pause is before the execution: the program is written, its attempt not yet counted.
    expect(paused.state).toMatchObject({ status: "running", attempt: 0, code: "print('waiting')\n" });
    expect(seen).toContain("paused");
    expect(seen.filter((kind) => kind === "state").length).toBeGreaterThan(1);

    // Going on without a decision pauses again at once: no whole state streams, and the checkpoint says it.
    const again = await driveRun(agent, null, { context, threadId: "drive" });
    expect(again).toMatchObject({ paused: true, request: { attempt: 1 }, state: { status: "running", attempt: 0 } });

    const ended = await driveRun(agent, new Command({ resume: { action: "approve" } }), { context, threadId: "drive" });
    expect(ended).toEqual({ paused: false, state: expect.objectContaining({ status: "passed", attempt: 1 }) });
  });
});
