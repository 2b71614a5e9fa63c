import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentState } from "../src/index.js";
import { cleanEnv, freePort, REPO, waitFor } from "./cli-helpers.js";
import { fence } from "./helpers.js";
import { startOpenAIStub, type OpenAIStub } from "./openai-stub.js";

/** The `langgraphjs` bin, run with this Node rather than through npx, so every process in the group is ours. */
const LANGGRAPH_CLI = fileURLToPath(new URL("../node_modules/@langchain/langgraph-cli/dist/cli/cli.mjs", import.meta.url));

// The graph as LangGraph Studio sees it: the real `langgraph-cli dev` server loading langgraph.json,
// driven over HTTP with the official SDK; only the model behind it is a local stub.

describe("the LangGraph server (what Studio talks to)", () => {
  let stub: OpenAIStub;
  let server: ChildProcess;
  let log = "";
  let client: Client;

  beforeAll(async () => {
    stub = await startOpenAIStub((_request, index) =>
      index === 0
        ? { content: fence("scores = {'ann': 3}\nprint('bob scored', scores['bob'])"), usage: { prompt_tokens: 110, completion_tokens: 20 } }
        : { content: fence("scores = {'ann': 3}\nprint('bob scored', scores.get('bob', 0))"), usage: { prompt_tokens: 160, completion_tokens: 22 } },
    );
    const port = await freePort();
    server = spawn(
      process.execPath,
      [LANGGRAPH_CLI, "dev", "--no-browser", "--no-reload", "--port", String(port), "--host", "127.0.0.1"],
      {
        cwd: REPO,
        // Its own process group, so the server and the workers it starts can all be killed at once.
        detached: true,
        env: cleanEnv({ LANGGRAPH_CLI_NO_ANALYTICS: "1", OPENAI_BASE_URL: stub.url, SELFHEAL_MODEL: "studio-stub", SELFHEAL_MODEL_RETRIES: "0" }),
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    server.stdout?.on("data", (chunk) => (log += chunk));
    server.stderr?.on("data", (chunk) => (log += chunk));
    await waitFor(() => /Server running at/.test(log) || server.exitCode !== null, "the dev server to start", 90_000);
    if (server.exitCode !== null) throw new Error(`the dev server exited:\n${log}`);
    client = new Client({ apiUrl: `http://127.0.0.1:${port}` });
  }, 120_000);

  afterAll(async () => {
    if (server?.pid) {
      try {
        process.kill(-server.pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
    await stub?.close();
  });

  it("serves the selfheal graph: schema, a streamed run with a real failure and fix, its state and history", async () => {
    const assistants = await client.assistants.search({ graphId: "selfheal" });
    const assistant = assistants[0];
    expect(assistant?.graph_id).toBe("selfheal");
    const schemas = await client.assistants.getSchemas(assistant!.assistant_id);
    expect(Object.keys(schemas.input_schema?.properties ?? {})).toContain("task");

    const thread = await client.threads.create();
    const nodes: string[] = [];
    const output: string[] = [];
    for await (const part of client.runs.stream(thread.thread_id, assistant!.assistant_id, {
      input: { task: "Print bob's score; he may be missing from the table." },
      streamMode: ["updates", "custom"],
    })) {
      if (part.event === "updates") nodes.push(...Object.keys(part.data as Record<string, unknown>));
      if (part.event === "custom") output.push((part.data as { line: string }).line);
      if (part.event === "error") throw new Error(`run failed: ${JSON.stringify(part.data)}`);
    }
        // Four steps an attempt: approval is off, so the gate is skipped, and the critic ends the run itself.
    expect(nodes).toEqual(["generator", "executor", "critic", "fixer", "executor", "critic"]);
    // The live output events: the real traceback of attempt 1, then the fixed program's line.
    expect(output).toContain("KeyError: 'bob'");
    expect(output).toContain("bob scored 0");

    const state = await client.threads.getState<AgentState>(thread.thread_id);
    expect(state.values).toMatchObject({ status: "passed", attempt: 2 });
    expect(state.values.errors).toEqual([expect.objectContaining({ type: "KeyError", count: 1 })]);
    expect(state.values.usage).toMatchObject({ inputTokens: 270, outputTokens: 42, calls: 2 });

    const history = await client.threads.getHistory<AgentState>(thread.thread_id, { limit: 50 });
    // Newest first: the end of the run, back to the input; Studio forks from any of these.
    expect(history[0]?.values.status).toBe("passed");
    expect(history.at(-1)?.next).toEqual(["__start__"]);
    const afterFailure = history.find((snapshot) => snapshot.next.includes("fixer"));
    expect(afterFailure?.values).toMatchObject({ attempt: 1, status: "running", critique: { passed: false } });
    expect(stub.requests).toHaveLength(2);
  }, 120_000);

  it("pauses a run for approval when the context asks for it, and resumes it with a command", async () => {
    const [assistant] = await client.assistants.search({ graphId: "selfheal" });
    const thread = await client.threads.create();
    const context = { approval: true };
    let paused: unknown;
    for await (const part of client.runs.stream(thread.thread_id, assistant!.assistant_id, {
      input: { task: "Print bob's score." },
      context,
      streamMode: ["updates"],
    })) {
      if (part.event === "updates" && "__interrupt__" in (part.data as Record<string, unknown>)) paused = part.data;
    }
    expect(paused).toMatchObject({ __interrupt__: [{ value: { kind: "approval", attempt: 1, code: expect.stringContaining("scores") } }] });
    const waiting = await client.threads.getState<AgentState>(thread.thread_id);
    expect(waiting.next).toEqual(["approval"]);

    // An edit runs the person's program instead of the model's.
    for await (const part of client.runs.stream(thread.thread_id, assistant!.assistant_id, {
      command: { resume: { action: "edit", code: "print('edited in studio')" } },
      context,
      streamMode: ["updates"],
    })) {
      if (part.event === "error") throw new Error(`run failed: ${JSON.stringify(part.data)}`);
    }
    const final = await client.threads.getState<AgentState>(thread.thread_id);
    expect(final.values).toMatchObject({ status: "passed", attempt: 1, lastRun: { stdout: "edited in studio\n" } });
  }, 60_000);
});

