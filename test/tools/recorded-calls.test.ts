import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { HumanMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { ChatOpenAI } from "@langchain/openai";
import { afterAll, describe, expect, it } from "vitest";
import { loadDataset } from "../../src/benchmark/dataset.js";
import type { BenchmarkReport } from "../../src/benchmark/records.js";
import { runBenchmark } from "../../src/benchmark/run.js";
import { SIMULATED_MODEL_LABEL, SimulatedBenchmarkModel } from "../../src/benchmark/simulated-model.js";
import {
  type AgentState,
  createAgent,
  createSandbox,
  ModelCallLog,
  ModelCallMissError,
  type ModelCallsMode,
  parseSettings,
  RecordedChatModel,
  ScriptedChatModel,
} from "../../src/internal.js";
import { fence } from "../helpers/helpers.js";
import { type OpenAIStub, startOpenAIStub } from "../helpers/openai-stub.js";
import { scratchDir } from "../helpers/scratch.js";

// Record a run against the local OpenAI-compatible server, stop the server, replay the run.

const sandbox = createSandbox({ kind: "process" });
afterAll(() => sandbox.close());

const SECRET = "sk-test-SECRET-0123456789";
const TASK = "Print bob's score; he may be missing from the table.";

/** Fails once (a real KeyError), then passes: the fixer's prompt carries the traceback. */
function startScoreStub(): Promise<OpenAIStub> {
  return startOpenAIStub((request) =>
    !request.messages.some((message) => message.content.includes("KeyError"))
      ? {
          content: fence("scores = {'ann': 3}\nprint('bob scored', scores['bob'])"),
          usage: { prompt_tokens: 110, completion_tokens: 20 },
        }
      : {
          content: fence("scores = {'ann': 3}\nprint('bob scored', scores.get('bob', 0))"),
          usage: { prompt_tokens: 160, completion_tokens: 22 },
        },
  );
}

/** What a checkpoint says about the run, without the timings that differ from one execution to the next. */
function outcomeAt(values: Partial<AgentState>) {
  return {
    attempt: values.attempt,
    status: values.status,
    code: values.code,
    history: values.history,
    errors: values.errors,
    usage: values.usage,
    reason: values.reason,
    stdout: values.lastRun?.stdout,
  };
}

async function runAgent(task: string, modelCalls: ModelCallsMode, model?: ChatOpenAI) {
  const agent = createAgent({ model, sandbox, checkpointer: new MemorySaver(), modelCalls });
  const config = { configurable: { thread_id: "t" } };
  const final = await agent.invoke({ task }, { ...config, context: parseSettings({ maxAttempts: 3 }) });
  const states = [];
  for await (const snapshot of agent.getStateHistory(config)) states.push(outcomeAt(snapshot.values));
  return { final, states: states.reverse() };
}

function filesIn(dir: string): string[] {
  return readdirSync(dir).map((name) => readFileSync(join(dir, name), "utf8"));
}

describe("recorded model calls", () => {
  it("replays a recorded run with the server stopped, checkpoint for checkpoint, and keeps the key out of the files", async () => {
    const dir = scratchDir("calls");
    const stub = await startScoreStub();
    const model = new ChatOpenAI({
      model: "stub-model",
      apiKey: SECRET,
      configuration: { baseURL: stub.url, defaultHeaders: { "X-Team-Token": "team-token-abc" } },
      maxRetries: 0,
    });
    const recorded = await runAgent(TASK, { record: dir }, model);
    await stub.close();
    expect(stub.requests).toHaveLength(2);
    expect(recorded.final).toMatchObject({ status: "passed", attempt: 2 });

    const replayed = await runAgent(TASK, { replay: dir });
    expect(replayed.states).toEqual(recorded.states);
    expect(replayed.final.usage).toMatchObject({ inputTokens: 270, outputTokens: 42, calls: 2 });

    const files = filesIn(dir);
    expect(files).toHaveLength(2);
    for (const text of files) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain("team-token-abc");
      expect(text).not.toMatch(/authorization|api_?key/i);
      expect(JSON.parse(text)).toMatchObject({ request: { model: "gpt-4o-mini" }, replies: [expect.any(Object)] });
    }
  });

  it("fails the call with a miss that names the request when the prompt has changed", async () => {
    const dir = scratchDir("calls");
    const stub = await startScoreStub();
    const model = new ChatOpenAI({ model: "stub-model", apiKey: SECRET, configuration: { baseURL: stub.url } });
    await runAgent(TASK, { record: dir }, model);
    await stub.close();

    const changed = await runAgent("Print ann's score.", { replay: dir });
    expect(changed.final.status).toBe("model_error");
    expect(changed.final.reason).toMatch(
      new RegExp(
        `^The generator model call failed: ModelCallMissError: no recorded reply for model request [0-9a-f]{32} in ${dir}: gpt-4o-mini, 2 message\\(s\\), last: ".*Print ann's score\\."; it holds 2 request\\(s\\) for "gpt-4o-mini", none asking this: the task, a setting or a prompt changed since it was recorded`,
      ),
    );
    expect(changed.final.attempt).toBe(0);
  });

  it("says which model a recording was made with when the replay asks another", async () => {
    const dir = scratchDir("calls");
    const recorder = (model: string) =>
      new RecordedChatModel({
        log: new ModelCallLog({ record: dir }),
        inner: new ScriptedChatModel(["hello"]),
        model,
        temperature: 0,
      });
    await recorder("qwen2.5-coder:7b").invoke([new HumanMessage("Say hello.")]);
    await recorder("llama3").invoke([new HumanMessage("Say hello.")]);
    const player = new RecordedChatModel({
      log: new ModelCallLog({ replay: dir }),
      model: "gpt-4o-mini",
      temperature: 0,
    });
    const miss = await player.invoke([new HumanMessage("Say hello.")]).catch((error: Error) => error);
    expect(miss).toBeInstanceOf(ModelCallMissError);
    expect((miss as Error).message).toMatch(
      /; it was recorded with "(qwen2\.5-coder:7b", "llama3|llama3", "qwen2\.5-coder:7b)", and this run asks "gpt-4o-mini": replay with the model it was recorded with \(--model on the CLI\)$/,
    );
    const empty = new RecordedChatModel({
      log: new ModelCallLog({ replay: scratchDir("calls") }),
      model: "m",
      temperature: 0,
    });
    await expect(empty.invoke([new HumanMessage("Say hello.")])).rejects.toThrow(
      /; the folder holds no recorded request$/,
    );
  });

  it("replays a benchmark run with no model: the same report, task for task", async () => {
    const dir = scratchDir("calls");
    const tasks = await loadDataset({ taskIds: ["HumanEval/0", "HumanEval/10"] });
    const simulated = await SimulatedBenchmarkModel.forTasks(tasks, sandbox);
    const run = (options: { models?: { model: SimulatedBenchmarkModel }; modelCalls: ModelCallsMode }) =>
      runBenchmark({
        tasks,
        sandbox,
        ...options,
        modelLabel: { name: "simulated", simulated: true, label: SIMULATED_MODEL_LABEL },
        dataset: "humaneval",
      });
    const withoutTimes = ({ wallMs: _wall, perTask, ...rest }: BenchmarkReport) => ({
      ...rest,
      perTask: perTask.map(({ wallMs: _taskWall, ...outcome }) => outcome),
    });
    const recorded = await run({ models: { model: simulated }, modelCalls: { record: dir } });
    // Each task fails once on its mutant and is repaired: two calls a task, all recorded.
    expect(recorded.perTask.map((task) => [task.taskId, task.status, task.attempts])).toEqual([
      ["HumanEval/0", "passed", 2],
      ["HumanEval/10", "passed", 2],
    ]);
    expect(readdirSync(dir)).toHaveLength(4);
    const replayed = await run({ modelCalls: { replay: dir } });
    expect(withoutTimes(replayed)).toEqual(withoutTimes(recorded));
  }, 120_000);

  it("answers a request asked again with its next recorded reply, and misses past the last", async () => {
    const dir = scratchDir("calls");
    const asked = [new HumanMessage("Say something.")];
    const recorder = new RecordedChatModel({
      log: new ModelCallLog({ record: dir }),
      inner: new ScriptedChatModel(["first", "second"]),
      model: "m",
      temperature: 0,
    });
    expect([(await recorder.invoke(asked)).content, (await recorder.invoke(asked)).content]).toEqual([
      "first",
      "second",
    ]);
    expect(readdirSync(dir)).toHaveLength(1);

    const player = new RecordedChatModel({ log: new ModelCallLog({ replay: dir }), model: "m", temperature: 0 });
    expect([(await player.invoke(asked)).content, (await player.invoke(asked)).content]).toEqual(["first", "second"]);
    await expect(player.invoke(asked)).rejects.toThrow(
      /\(asked 3 times, recorded fewer\) in .*; the run asks more than the recorded one did$/,
    );
    // Another temperature is another request.
    const warmer = new RecordedChatModel({ log: new ModelCallLog({ replay: dir }), model: "m", temperature: 1 });
    await expect(warmer.invoke(asked)).rejects.toThrow(/^no recorded reply for model request [0-9a-f]{32} in /);
  });
});
