import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { Client } from "@langchain/langgraph-sdk";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parseDevArgs, serverEnv } from "../../scripts/dev.js";
import { statFields } from "../../src/core/process.js";
import type { AgentState } from "../../src/index.js";
import { cleanEnv, freePort, REPO, waitFor } from "../helpers/cli-helpers.js";
import { fence } from "../helpers/helpers.js";
import { type OpenAIStub, startOpenAIStub } from "../helpers/openai-stub.js";
import { scratchDir } from "../helpers/scratch.js";

// The graph as LangGraph Studio sees it: the real `langgraph-cli dev` server loading langgraph.json,
// started by `npm run dev`'s launcher (scripts/dev.ts) and driven over HTTP with the official SDK;
// only the model behind it is a local stub.

/**
 * `npm run dev -- ...args`, through the real npm as a user starts it (a SIGTERM to npm's pid must
 * reach the server), in a process group of its own, so a test can clean up after it.
 */
function startDev(args: string[], env: Record<string, string> = {}): ChildProcess {
  return spawn("npm", ["run", "--silent", "dev", "--", ...args], {
    cwd: REPO,
    detached: true,
    env: cleanEnv(env),
    stdio: ["ignore", "pipe", "pipe"],
  });
}

/** The processes on this machine whose parent (field 4 of /proc/PID/stat) or process group (field 5) is `id`. */
function processesUnder(id: number, field: "parent" | "group"): number[] {
  const index = field === "parent" ? 1 : 2;
  return (
    readdirSync("/proc")
      .filter((name) => /^\d+$/.test(name))
      // Gone while we looked: no fields, no match.
      .filter((pid) => Number(statFields(Number(pid))?.[index]) === id)
      .map(Number)
  );
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) =>
    child.exitCode !== null || child.signalCode !== null
      ? resolve(child.exitCode)
      : child.once("exit", (code) => resolve(code)),
  );

describe("the LangGraph server (what Studio talks to)", () => {
  let stub: OpenAIStub;
  let server: ChildProcess;
  let port: number;
  let log = "";
  let client: Client;

  beforeAll(async () => {
    // A task that says "stubborn" gets the failing program every time.
    stub = await startOpenAIStub((request, index) =>
      index === 0 || request.messages.some((message) => message.content.includes("stubborn"))
        ? {
            content: fence("scores = {'ann': 3}\nprint('bob scored', scores['bob'])"),
            usage: { prompt_tokens: 110, completion_tokens: 20 },
          }
        : {
            content: fence("scores = {'ann': 3}\nprint('bob scored', scores.get('bob', 0))"),
            usage: { prompt_tokens: 160, completion_tokens: 22 },
          },
    );
    port = await freePort();
    server = startDev(["--no-reload", "--port", String(port), "--host", "127.0.0.1"], {
      OPENAI_BASE_URL: stub.url,
      SELFHEAL_MODEL: "studio-stub",
      SELFHEAL_MODEL_RETRIES: "0",
    });
    server.stdout?.on("data", (chunk) => (log += chunk));
    server.stderr?.on("data", (chunk) => (log += chunk));
    await waitFor(() => /Server running at/.test(log) || server.exitCode !== null, "the dev server to start", 90_000);
    if (server.exitCode !== null) throw new Error(`the dev server exited:\n${log}`);
    client = new Client({ apiUrl: `http://127.0.0.1:${port}` });
  }, 120_000);

  /**
   * The assistant the server makes for a graph from langgraph.json. The server keeps its state in
   * the checkout's .langgraph_api/, so an earlier run's assistants (one attempt, say) are there too.
   */
  const graphAssistant = async (graphId: string) => {
    const [assistant] = await client.assistants.search({ graphId, metadata: { created_by: "system" } });
    expect(assistant, `the ${graphId} graph's own assistant`).toBeDefined();
    return assistant!;
  };

  // What the tests make on the server is deleted after each: the server keeps its state in the
  // checkout's .langgraph_api/, which is also the developer's own Studio state.
  const made = { threads: [] as string[], assistants: [] as string[] };
  const newThread = async () => {
    const thread = await client.threads.create();
    made.threads.push(thread.thread_id);
    return thread;
  };
  /** The error a run ends with, as the SDK throws it from the server: JSON with the error's name and message. */
  const runError = async (threadId: string, assistantId: string, input: Record<string, unknown>) => {
    const failed = await client.runs.wait(threadId, assistantId, { input }).then(
      () => new Error("the run did not fail"),
      (error: Error) => error,
    );
    return JSON.parse(failed.message.replace(/^Error: /, "")) as unknown;
  };
  afterEach(async () => {
    if (!client || server.exitCode !== null || server.signalCode !== null) return;
    await Promise.all([
      ...made.threads.splice(0).map((id) => client.threads.delete(id)),
      ...made.assistants.splice(0).map((id) => client.assistants.delete(id)),
    ]);
  });

  afterAll(async () => {
    // The last test stops the launcher; this is for a run that failed before it.
    if (server?.pid && server.exitCode === null && server.signalCode === null) {
      const launchers = processesUnder(server.pid, "parent");
      const groups = launchers.flatMap((launcher) => processesUnder(launcher, "parent"));
      for (const pid of [server.pid, ...groups]) {
        try {
          process.kill(-pid, "SIGKILL");
        } catch {
          // Already gone.
        }
      }
    }
    await stub?.close();
  });

  it("starts with no .env and no warning about it", () => {
    expect(log).not.toMatch(/Env file/);
    expect(log).toContain(`Server running at 127.0.0.1:${port}`);
  });

  it("serves the selfheal graph: schema, a streamed run with a real failure and fix, its state and history", async () => {
    const assistant = await graphAssistant("selfheal");
    expect(assistant?.graph_id).toBe("selfheal");
    const schemas = await client.assistants.getSchemas(assistant.assistant_id);
    // What a person gives, not the state's bookkeeping (draft, decision, resumeFrom...).
    expect(Object.keys(schemas.input_schema?.properties ?? {})).toEqual([
      "task",
      "language",
      "tests",
      "inputs",
      "expect",
    ]);
    // LangGraph makes a graph's input schema partial, so the form learns from the description that task is needed.
    expect(schemas.input_schema?.properties?.task).toMatchObject({
      description: expect.stringMatching(/^Required\. /),
    });
    // The kept artifacts are part of the state Studio shows.
    expect(Object.keys(schemas.state_schema?.properties ?? {})).toContain("artifacts");

    const thread = await newThread();
    const nodes: string[] = [];
    const output: string[] = [];
    for await (const part of client.runs.stream(thread.thread_id, assistant.assistant_id, {
      input: { task: "Print bob's score; he may be missing from the table." },
      streamMode: ["updates", "custom"],
    })) {
      if (part.event === "updates") nodes.push(...Object.keys(part.data as Record<string, unknown>));
      if (part.event === "custom") output.push((part.data as { line: string }).line);
      if (part.event === "error") throw new Error(`run failed: ${JSON.stringify(part.data)}`);
    }
    // Four steps an attempt: approval is off, so the gate is skipped, and the critic ends the run itself.
    expect(nodes).toEqual(["generator", "executor", "critic", "fixer", "executor", "critic", "finish"]);
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

    // A second task on the same thread is refused before anything runs, and the thread keeps its run.
    expect(await runError(thread.thread_id, assistant.assistant_id, { task: "Print hello and exit 3." })).toEqual({
      error: "ThreadHasRunError",
      message: `thread ${thread.thread_id} already has a run (passed, 2 attempts): give a new task a new thread, and continue this run with a resume (no input)`,
    });
    expect(stub.requests).toHaveLength(2);
    const after = await client.threads.getState<AgentState>(thread.thread_id);
    expect(after.values).toMatchObject({ task: state.values.task, status: "passed", attempt: 2 });
  }, 120_000);

  it("offers every run setting as the context schema, with its default and its bounds", async () => {
    const assistant = await graphAssistant("selfheal");
    const schemas = await client.assistants.getSchemas(assistant.assistant_id);
    const settings = schemas.context_schema?.properties as Record<string, Record<string, unknown>>;
    expect(Object.keys(settings)).toEqual([
      "maxAttempts",
      "candidates",
      "strategy",
      "proposedInputs",
      "sandboxConcurrency",
      "tokenBudget",
      "repeatLimit",
      "timeoutMs",
      "memoryMb",
      "cpuSeconds",
      "maxProcesses",
      "maxFileMb",
      "maxDiskMb",
      "maxOutputBytes",
      "maxConnections",
      "maxNetworkMb",
      "modelTimeoutMs",
      "model",
      "fixerModel",
      "strongFixerModel",
      "criticModel",
      "temperature",
      "llmReview",
      "maxOutputTokens",
      "approval",
      "maxInputBytes",
      "maxArtifacts",
      "maxArtifactBytes",
      "artifactsDir",
      "python",
      "runtimeValues",
      "traceCalls",
      "sandbox",
      "testIsolation",
      "sandboxPoolSize",
      "storeWaitSeconds",
      "packages",
      "packageInstall",
      "allowHosts",
    ]);
    for (const [name, setting] of Object.entries(settings)) {
      expect(setting, name).toHaveProperty("default");
      // Studio shows it beside the field.
      expect(setting.description, name).toMatch(/^[A-Z].{10,}/);
    }
    expect(settings).toMatchObject({
      maxAttempts: { type: "integer", default: 4, minimum: 1, maximum: 100 },
      tokenBudget: { type: "integer", default: 40_000, minimum: 1 },
      repeatLimit: { default: 2, minimum: 1 },
      timeoutMs: { default: 10_000, minimum: 100, maximum: 3_600_000 },
      memoryMb: { type: "integer", default: 512, minimum: 32, maximum: 65_536 },
      cpuSeconds: { type: "integer", default: 10, minimum: 1, maximum: 3_600 },
      maxProcesses: { type: "integer", default: 64, minimum: 4, maximum: 4_096 },
      maxFileMb: { type: "integer", default: 16, minimum: 1, maximum: 65_536 },
      maxDiskMb: { type: "integer", default: 64, minimum: 1, maximum: 65_536 },
      sandboxPoolSize: { type: "integer", default: 1, minimum: 1, maximum: 16 },
      storeWaitSeconds: { type: "integer", default: 180, minimum: 0, maximum: 86400 },
      maxOutputBytes: { type: "integer", default: 65_536, minimum: 1_024, maximum: 67_108_864 },
      modelTimeoutMs: { default: 120_000, minimum: 100, maximum: 3_600_000 },
      // The server's environment names the model.
      model: { type: "string", default: "studio-stub", minLength: 1 },
      temperature: { default: 0.2, minimum: 0, maximum: 2 },
      maxOutputTokens: { default: 2048, minimum: 64 },
      approval: { type: "boolean", default: false },
      sandbox: { default: "auto", enum: ["auto", "bwrap", "process", "container", "gvisor"] },
      testIsolation: { default: "process", enum: ["process", "shared"] },
      allowHosts: { type: "array", default: [] },
    });
    expect(schemas.config_schema).toEqual(schemas.context_schema);

    // The example graph with an extra node is declared the same way (studioDeclaration()).
    const example = await graphAssistant("selfheal-static-check");
    const exampleSchemas = await client.assistants.getSchemas(example.assistant_id);
    expect(exampleSchemas.context_schema).toEqual(schemas.context_schema);
    expect(exampleSchemas.input_schema).toEqual(schemas.input_schema);
  });

  it("runs with the settings of an assistant made from the SDK", async () => {
    const assistant = await client.assistants.create({
      graphId: "selfheal",
      name: "one attempt",
      context: { maxAttempts: 1, sandbox: "process" },
    });
    made.assistants.push(assistant.assistant_id);
    const thread = await newThread();
    await client.runs.wait(thread.thread_id, assistant.assistant_id, {
      input: { task: "Print bob's score, stubborn edition." },
    });
    const state = await client.threads.getState<AgentState>(thread.thread_id);
    // The default of four attempts would have gone on to the fixer.
    expect(state.values).toMatchObject({ status: "failed", attempt: 1 });
    expect(state.values.history).toHaveLength(1);
  });

  it("answers a bad input with the readable line the CLI gives, and refuses a setting given as input", async () => {
    const assistant = await graphAssistant("selfheal");
    const errorOf = async (input: Record<string, unknown>) =>
      runError((await newThread()).thread_id, assistant.assistant_id, input);
    expect(await errorOf({ task: "" })).toEqual({ error: "InvalidSettingsError", message: "task must not be empty" });
    // A setting of the wrong type in an assistant's context: the same one line, not zod's issues as JSON.
    const wrongType = await client.assistants.create({ graphId: "selfheal", context: { maxAttempts: "lots" } });
    made.assistants.push(wrongType.assistant_id);
    expect(await runError((await newThread()).thread_id, wrongType.assistant_id, { task: "Print 1." })).toEqual({
      error: "InvalidSettingsError",
      message: "maxAttempts must be a number",
    });
    expect(await errorOf({ task: "Print 1.", maxAttempts: 1 })).toEqual({
      error: "InvalidSettingsError",
      message:
        "\"maxAttempts\" is a setting, not a field of the input: give it with the settings (invoke's context, MCP's settings, a Studio assistant's context)",
    });
  });

  it("pauses a run for approval when the context asks for it, and resumes it with a command", async () => {
    const assistant = await graphAssistant("selfheal");
    const thread = await newThread();
    const context = { approval: true };
    let paused: unknown;
    for await (const part of client.runs.stream(thread.thread_id, assistant.assistant_id, {
      input: { task: "Print bob's score." },
      context,
      streamMode: ["updates"],
    })) {
      if (part.event === "updates" && "__interrupt__" in (part.data as Record<string, unknown>)) paused = part.data;
    }
    expect(paused).toMatchObject({
      __interrupt__: [{ value: { kind: "approval", attempt: 1, code: expect.stringContaining("scores") } }],
    });
    const waiting = await client.threads.getState<AgentState>(thread.thread_id);
    expect(waiting.next).toEqual(["approval"]);

    // An edit runs the person's program instead of the model's.
    for await (const part of client.runs.stream(thread.thread_id, assistant.assistant_id, {
      command: { resume: { action: "edit", code: "print('edited in studio')" } },
      context,
      streamMode: ["updates"],
    })) {
      if (part.event === "error") throw new Error(`run failed: ${JSON.stringify(part.data)}`);
    }
    const final = await client.threads.getState<AgentState>(thread.thread_id);
    expect(final.values).toMatchObject({ status: "passed", attempt: 1, lastRun: { stdout: "edited in studio\n" } });
  });

  it("draws the round of candidates, and streams three candidates written and run at once", async () => {
    const assistant = await graphAssistant("selfheal");
    const drawn = await client.assistants.getGraph(assistant.assistant_id);
    expect(drawn.nodes.map((node) => node.id)).toEqual(expect.arrayContaining(["candidate", "join"]));
    const edges = drawn.edges.map((edge) => `${edge.source}->${edge.target}`);
    expect(edges).toEqual(
      expect.arrayContaining([
        "__start__->generator",
        "__start__->candidate",
        "candidate->join",
        "join->critic",
        "join->finish",
        "critic->candidate",
      ]),
    );

    const calls = stub.requests.length;
    const thread = await newThread();
    const nodes: string[] = [];
    const printedBy = new Set<number>();
    for await (const part of client.runs.stream(thread.thread_id, assistant.assistant_id, {
      input: { task: "Print bob's score; he may be missing from the table." },
      context: { candidates: 3 },
      streamMode: ["updates", "custom"],
    })) {
      if (part.event === "updates") nodes.push(...Object.keys(part.data as Record<string, unknown>));
      if (part.event === "custom") printedBy.add((part.data as { candidate: number }).candidate);
      if (part.event === "error") throw new Error(`run failed: ${JSON.stringify(part.data)}`);
    }
    expect(nodes).toEqual(["candidate", "candidate", "candidate", "join", "critic", "finish"]);
    expect([...printedBy].sort()).toEqual([0, 1, 2]);
    expect(stub.requests.length - calls).toBe(3);
    const state = await client.threads.getState<AgentState>(thread.thread_id);
    expect(state.values).toMatchObject({
      status: "passed",
      attempt: 1,
      candidateChoice: { size: 3, passed: 3, agreement: "all 3 candidates print the same" },
    });
    expect(state.values.candidates).toHaveLength(3);
  });

  // Last in this block: it stops the server the tests above use.
  it("stops the server and every worker it started when npm run dev's pid gets SIGTERM, and the port closes", async () => {
    // npm's child is the launcher (scripts/dev.ts); its child that leads a group of its own is
    // langgraph-cli, with its workers (esbuild, for tsx, is a child of the launcher too).
    const [launcher] = processesUnder(server.pid!, "parent");
    expect(launcher).toBeDefined();
    const group = processesUnder(launcher!, "parent").find((pid) => processesUnder(pid, "group").includes(pid));
    expect(group).toBeDefined();
    expect(processesUnder(group!, "group").length).toBeGreaterThan(1);
    server.kill("SIGTERM");
    expect(await exited(server)).not.toBeNull();
    await waitFor(() => processesUnder(group!, "group").length === 0, "the server's process group to be gone", 15_000);
    await waitFor(() => statFields(launcher!) === null, "the launcher to exit", 15_000);
    await expect(fetch(`http://127.0.0.1:${port}/ok`)).rejects.toThrow();
  });
});

describe("npm run dev", () => {
  let holder: Server;
  let taken: number;
  beforeAll(async () => {
    holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    taken = (holder.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => holder.close(() => resolve())));

  it("says in one line that the port is taken and exits 1, starting no server", async () => {
    const dev = startDev(["--port", String(taken), "--host", "127.0.0.1"]);
    let stdout = "";
    let stderr = "";
    dev.stdout?.on("data", (chunk) => (stdout += chunk));
    dev.stderr?.on("data", (chunk) => (stderr += chunk));
    expect(await exited(dev)).toBe(1);
    expect(stderr).toBe(
      `selfheal dev: port ${taken} on 127.0.0.1 is already in use (another dev server?); pick another with \`npm run dev -- --port ${taken + 1}\`\n`,
    );
    expect(stdout).toBe("");
  });

  it("gives the server the variables of a .env beside langgraph.json, under those already set, and works without one", () => {
    const root = scratchDir("dev-env");
    expect(serverEnv(root, { PATH: "/bin" })).toEqual({ PATH: "/bin", LANGGRAPH_CLI_NO_ANALYTICS: "1" });
    writeFileSync(join(root, ".env"), "OPENAI_API_KEY=from-file\nSELFHEAL_MODEL=file-model\n");
    expect(serverEnv(root, { SELFHEAL_MODEL: "set-model" })).toEqual({
      OPENAI_API_KEY: "from-file",
      SELFHEAL_MODEL: "set-model",
      LANGGRAPH_CLI_NO_ANALYTICS: "1",
    });
  });

  it("reads --port and --host as langgraphjs dev spells them, and passes the rest on", () => {
    expect(parseDevArgs([])).toEqual({ port: 2024, host: "localhost", rest: [] });
    expect(parseDevArgs(["--port", "3000", "--no-reload", "-h", "0.0.0.0"])).toEqual({
      port: 3000,
      host: "0.0.0.0",
      rest: ["--no-reload"],
    });
    expect(parseDevArgs(["--port=3001", "--host=127.0.0.1"])).toMatchObject({ port: 3001, host: "127.0.0.1" });
    expect(parseDevArgs(["-p", "0"])).toEqual({ error: '--port must be a number from 1 to 65535, not "0"' });
    expect(parseDevArgs(["--port"])).toEqual({ error: "--port needs a value" });
  });
});
