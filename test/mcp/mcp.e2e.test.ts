import { spawn } from "node:child_process";
import { randomInt } from "node:crypto";
import { request } from "node:http";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  type CallToolResult,
  CallToolResultSchema,
  LoggingMessageNotificationSchema,
  type Progress,
} from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, cleanEnv, REPO, runCli, waitFor } from "../helpers/cli-helpers.js";
import { fence } from "../helpers/helpers.js";
import { type OpenAIStub, type StubAnswer, type StubRequest, startOpenAIStub } from "../helpers/openai-stub.js";
import { pidsWithMarker } from "../helpers/owner-harness.js";
import { scratchDir } from "../helpers/scratch.js";

// `selfheal mcp` as an MCP client sees it: the real binary, spoken to by the SDK's own client over
// stdio and over Streamable HTTP; only the model behind it is the local OpenAI-compatible stub.

/** A 1x1 PNG, as the fixed program writes it to out/chart.png. */
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

const BROKEN = "scores = {'ann': 3}\nprint('bob scored', scores['bob'])";
const FIXED = `import base64, os\nscores = {'ann': 3}\nprint('bob scored', scores.get('bob', 0))\nos.makedirs('out', exist_ok=True)\nopen('out/chart.png', 'wb').write(base64.b64decode('${PNG}'))`;
/** A program that waits on a sleep the test can find by its marker and end when it chooses. */
const SLEEP_MARKER = `300.${randomInt(1_000_000, 9_999_999)}`;
const SLOW = `import subprocess\nprint('started', flush=True)\nsubprocess.run(['sleep', '${SLEEP_MARKER}'])\nprint('finished')`;

let flakyCalls = 0;

/**
 * Fails once with a real KeyError, then passes; a task that says "slowly" gets a program that
 * takes a while, one that says "flaky" a server error on its first call.
 */
function answer(request: StubRequest): StubAnswer {
  const prompt = request.messages.map((message) => message.content).join("\n");
  if (prompt.includes("flaky") && flakyCalls++ === 0) return { status: 500, message: "the stub fell over" };
  if (prompt.includes("slowly")) return { content: fence(SLOW), usage: { prompt_tokens: 50, completion_tokens: 10 } };
  if (prompt.includes("5000 lines")) return { content: fence("for i in range(5000):\n    print(f'line {i}')") };
  return prompt.includes("KeyError")
    ? { content: fence(FIXED), usage: { prompt_tokens: 160, completion_tokens: 22 } }
    : { content: fence(BROKEN), usage: { prompt_tokens: 110, completion_tokens: 20 } };
}

const TASK = "Print bob's score (he may be missing) and save a chart to out/chart.png.";

interface Heard {
  progress: Progress[];
  logs: unknown[];
}

function listen(client: Client): Heard {
  const heard: Heard = { progress: [], logs: [] };
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    heard.logs.push(notification.params.data);
  });
  return heard;
}

async function call(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  options: { heard?: Heard; signal?: AbortSignal } = {},
) {
  return (await client.callTool({ name, arguments: args }, CallToolResultSchema, {
    signal: options.signal,
    timeout: 240_000,
    ...(options.heard ? { onprogress: (progress: Progress) => options.heard?.progress.push(progress) } : {}),
  })) as CallToolResult;
}

const textOf = (result: CallToolResult) =>
  result.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("\n");

let stub: OpenAIStub;
beforeAll(async () => {
  stub = await startOpenAIStub(answer);
});
afterAll(() => stub?.close());

const modelEnv = () => ({ OPENAI_BASE_URL: stub.url, SELFHEAL_MODEL: "mcp-stub", SELFHEAL_MODEL_RETRIES: "0" });

describe("selfheal mcp over stdio", () => {
  const db = join(scratchDir("mcp"), "runs.db");
  let client: Client;
  let heard: Heard;

  beforeAll(async () => {
    client = new Client({ name: "selfheal-test", version: "1.0.0" });
    heard = listen(client);
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [BIN, "mcp", "--db", db],
        env: cleanEnv(modelEnv()) as Record<string, string>,
        cwd: scratchDir("cwd"),
        stderr: "pipe",
      }),
    );
  }, 120_000);
  afterAll(() => client?.close());

  it("lists its tools with input schemas taken from the agent's own", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(["list_runs", "resume", "run_history", "solve"]);
    const solve = tools.find((tool) => tool.name === "solve")!;
    expect(Object.keys(solve.inputSchema.properties ?? {}).sort()).toEqual(
      ["expect", "inputs", "language", "settings", "task", "tests", "threadId"].sort(),
    );
    expect(solve.inputSchema.properties?.language).toMatchObject({ enum: ["python", "javascript"] });
    expect(solve.inputSchema.properties?.settings).toMatchObject({
      properties: { maxAttempts: { minimum: 1, maximum: 100 } },
    });
  });

  it("solves a task that fails once: progress per attempt in order, the output live, the chart as an image", async () => {
    heard.logs.length = 0;
    const result = await call(
      client,
      "solve",
      { task: TASK, expect: ["out/chart.png"], settings: { sandbox: "process", maxAttempts: 3 } },
      { heard },
    );
    expect(result.isError, textOf(result)).toBe(false);
    expect(result.structuredContent).toMatchObject({
      status: "passed",
      attempts: 2,
      tokens: 110 + 20 + 160 + 22,
      code: `${FIXED}\n`,
      artifacts: [{ name: "out/chart.png", mediaType: "image/png" }],
    });
    expect(heard.progress.map(({ progress, total }) => [progress, total])).toEqual([
      [1, 3],
      [2, 3],
    ]);
    expect(heard.progress[0]?.message).toMatch(/^attempt 1: .*KeyError/);
    expect(heard.progress[1]?.message).toBe("attempt 2: passed");
    // The program's lines, as they were printed, before the attempt they belong to was judged.
    const lines = heard.logs.filter(
      (data): data is { attempt: number; line: string } => typeof data === "object" && data !== null && "line" in data,
    );
    expect(lines.map(({ attempt, line }) => `${attempt} ${line}`)).toEqual(
      expect.arrayContaining(["1 KeyError: 'bob'", "2 bob scored 0"]),
    );
    const order = heard.logs.map((data) => (typeof data === "string" ? data : `${(data as { line: string }).line}`));
    expect(order.indexOf("bob scored 0")).toBeGreaterThan(order.findIndex((data) => data.startsWith("attempt 1:")));
    expect(result.content).toContainEqual({ type: "image", mimeType: "image/png", data: PNG });

    const threadId = (result.structuredContent as { threadId: string }).threadId;
    const history = await call(client, "run_history", { threadId });
    expect(history.structuredContent).toMatchObject({
      status: "passed",
      attempts: [
        { attempt: 1, outcome: "KeyError" },
        { attempt: 2, outcome: "passed" },
      ],
    });
    const listed = await call(client, "list_runs", {});
    expect((listed.structuredContent as { runs: unknown[] }).runs).toContainEqual(
      expect.objectContaining({ threadId, status: "passed", attempts: 2 }),
    );
    // The CLI reads the same store.
    const runs = await runCli(["runs", "--json", "--db", db]);
    expect(JSON.parse(runs.stdout)).toContainEqual(expect.objectContaining({ threadId, status: "passed" }));
  }, 240_000);

  it("answers a bad argument with a tool error and keeps serving", async () => {
    const bad = await call(client, "solve", { task: "Print hi.", language: "cobol" });
    expect(bad.isError).toBe(true);
    expect(textOf(bad)).toMatch(/language/);
    const unknown = await call(client, "run_history", { threadId: "no-such-thread" });
    expect(unknown).toMatchObject({
      isError: true,
      content: [{ type: "text", text: "no run with thread id no-such-thread" }],
    });
    expect((await client.listTools()).tools).toHaveLength(4);
  });

  it("sends the first 200 lines of a program that prints 5000, and says how many more there were", async () => {
    heard.logs.length = 0;
    const result = await call(client, "solve", { task: "Print 5000 lines.", settings: { sandbox: "process" } });
    expect(result.structuredContent, textOf(result)).toMatchObject({ status: "passed", attempts: 1 });
    const lines = heard.logs.flatMap((data) => (typeof data === "object" && data && "line" in data ? [data.line] : []));
    expect(lines).toEqual(Array.from({ length: 200 }, (_, index) => `line ${index}`));
    expect(heard.logs).toContain("attempt 1: 4800 more line(s) of output not sent");
  }, 240_000);

  it("pauses a run that asks for approval, and runs the program a decision gives it", async () => {
    const paused = await call(client, "solve", { task: TASK, settings: { sandbox: "process", approval: true } });
    expect(paused.structuredContent, textOf(paused)).toMatchObject({
      status: "awaiting_approval",
      awaitingApproval: { attempt: 1, code: `${BROKEN}\n` },
    });
    const threadId = (paused.structuredContent as { threadId: string }).threadId;
    const undecided = await call(client, "resume", { threadId });
    expect(undecided).toMatchObject({ isError: true });
    expect(textOf(undecided)).toBe(
      `thread ${threadId} is waiting for approval: give a decision (approve, reject or edit)`,
    );
    const edited = await call(client, "resume", {
      threadId,
      decision: { action: "edit", code: "print('edited over MCP')" },
    });
    expect(edited.structuredContent, textOf(edited)).toMatchObject({
      status: "passed",
      attempts: 1,
      code: "print('edited over MCP')",
    });
  }, 240_000);

  it("resumes a run that stopped on a model error once the server answers", async () => {
    const failed = await call(client, "solve", { task: "Print a flaky greeting.", settings: { sandbox: "process" } });
    expect(failed.structuredContent, textOf(failed)).toMatchObject({ status: "model_error", attempts: 0 });
    const threadId = (failed.structuredContent as { threadId: string }).threadId;
    const resumed = await call(client, "resume", { threadId });
    // The stub's next answer for this task is the KeyError program, then its fix.
    expect(resumed.structuredContent, textOf(resumed)).toMatchObject({ status: "passed", attempts: 2 });
    const again = await call(client, "resume", { threadId });
    expect(again).toMatchObject({
      isError: true,
      content: [
        { type: "text", text: `thread ${threadId} already ended: passed; start a new run with the solve tool` },
      ],
    });
  }, 240_000);

  it("stops a run the client cancels, keeps its checkpoints, and resumes it", async () => {
    const controller = new AbortController();
    heard.logs.length = 0;
    const threadId = "cancelled-run";
    const cancelled = call(
      client,
      "solve",
      { task: "Print started, then finish slowly.", threadId, settings: { sandbox: "process" } },
      { signal: controller.signal },
    );
    await waitFor(
      () => heard.logs.some((data) => (data as { line?: string }).line === "started"),
      "the program's first line",
      120_000,
    );
    // The program prints before it starts its sleep: wait until the sleep is there to be stopped.
    await waitFor(() => pidsWithMarker(SLEEP_MARKER).length === 1, "the program's sleep");
    controller.abort();
    await expect(cancelled).rejects.toThrow(/abort/i);
    // The cancel reached the sandbox: the program's sleep, 300 s long, is gone.
    await waitFor(() => pidsWithMarker(SLEEP_MARKER).length === 0, "the cancelled program's sleep gone", 30_000);

    // The run stopped before its executor step ended: checkpoints up to the program written.
    const history = await call(client, "run_history", { threadId });
    expect(history.structuredContent).toMatchObject({ status: "unfinished (next: executor)", next: ["executor"] });
    expect((history.structuredContent as { checkpoints: number }).checkpoints).toBeGreaterThan(1);

    // Until the cancelled call has unwound, the thread is busy; then it runs on from its checkpoint,
    // running the same program again: we end its sleep once it is there.
    const endSleep = setInterval(() => {
      for (const pid of pidsWithMarker(SLEEP_MARKER)) process.kill(pid, "SIGKILL");
    }, 200);
    try {
      let resumed: CallToolResult | undefined;
      while (!resumed || (resumed.isError && /running right now/.test(textOf(resumed)))) {
        resumed = await call(client, "resume", { threadId });
      }
      expect(resumed.structuredContent, textOf(resumed)).toMatchObject({ status: "passed", attempts: 1 });
    } finally {
      clearInterval(endSleep);
    }
  }, 240_000);
});

describe("selfheal mcp --http", () => {
  const db = join(scratchDir("mcp"), "runs.db");
  let url: string;
  let server: ReturnType<typeof spawn>;

  beforeAll(async () => {
    server = spawn(process.execPath, [BIN, "mcp", "--http", "--port", "0", "--db", db], {
      cwd: scratchDir("cwd"),
      env: cleanEnv(modelEnv()),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    server.stderr?.on("data", (chunk) => (stderr += chunk));
    await waitFor(() => /at (http:\S+)/.test(stderr) || server.exitCode !== null, "the MCP server to listen", 120_000);
    url = /at (http:\S+)/.exec(stderr)?.[1] ?? "";
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
  }, 150_000);
  afterAll(() => {
    server?.kill("SIGTERM");
  });

  async function connect(): Promise<{ client: Client; heard: Heard }> {
    const client = new Client({ name: "selfheal-test", version: "1.0.0" });
    const heard = listen(client);
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    return { client, heard };
  }

  it("serves two clients at once, each hearing the progress of its own run", async () => {
    const [a, b] = await Promise.all([connect(), connect()]);
    const [first, second] = await Promise.all([
      call(a.client, "solve", { task: `${TASK} (client a)`, settings: { sandbox: "process" } }, { heard: a.heard }),
      call(b.client, "solve", { task: `${TASK} (client b)`, settings: { sandbox: "process" } }, { heard: b.heard }),
    ]);
    for (const [result, heard] of [
      [first, a.heard],
      [second, b.heard],
    ] as const) {
      expect(result.structuredContent, textOf(result)).toMatchObject({ status: "passed", attempts: 2 });
      expect(heard.progress.map(({ progress }) => progress)).toEqual([1, 2]);
    }
    const threads = [first, second].map((result) => (result.structuredContent as { threadId: string }).threadId);
    expect(new Set(threads).size).toBe(2);
    const listed = await call(a.client, "list_runs", {});
    expect((listed.structuredContent as { runs: Array<{ threadId: string }> }).runs.map((run) => run.threadId)).toEqual(
      expect.arrayContaining(threads),
    );
    await Promise.all([a.client.close(), b.client.close()]);
  }, 240_000);

  it("says in one line, exit 2, that its port is taken or no port at all, and serves nothing", async () => {
    const { port } = new URL(url);
    const taken = await runCli(["mcp", "--http", "--port", port, "--db", join(scratchDir("mcp-taken"), "runs.db")]);
    expect(taken.stderr).toBe(
      `selfheal: cannot serve MCP over HTTP: 127.0.0.1:${port} is in use: choose another --port (0 takes any free one)\n`,
    );
    expect(taken.code).toBe(2);
    const outOfRange = await runCli(["mcp", "--http", "--port", "65536"]);
    expect(outOfRange.stderr).toBe(
      'selfheal: --port must be a port number from 0 to 65535 (0: any free one) (got "65536") (see `selfheal mcp --help`)\n',
    );
    expect(outOfRange.code).toBe(2);
  }, 60_000);

  it("refuses a request whose Host is not the loopback address it serves (DNS rebinding)", async () => {
    const { port } = new URL(url);
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "x", version: "1" } },
    });
    // fetch() would not send a Host of our choosing; a raw request does, as a rebound browser would.
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const req = request(url, {
        method: "POST",
        headers: {
          host: `attacker.example:${port}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
      });
      req.on("response", (response) => {
        response.resume();
        resolve(response.statusCode);
      });
      req.on("error", reject);
      req.end(body);
    });
    expect(status).toBe(403);
  });
});

// The README's MCP configs, as a reader copies them: the CLI installed from the clone with
// `npm install -g` (the real npm, into a scratch prefix), then `"command": "selfheal"`.
describe("selfheal mcp as the README's config runs it, after npm install -g of the clone", () => {
  const prefix = scratchDir("npm-global");
  const path = `${join(prefix, "bin")}:${process.env.PATH}`;

  beforeAll(async () => {
    const env = Object.fromEntries(
      Object.entries(cleanEnv()).filter(([name]) => !name.startsWith("npm_") && name !== "NODE_OPTIONS"),
    );
    const installed = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn("npm", ["install", "-g", "--prefix", prefix, "--no-audit", "--no-fund", REPO], { env });
      let stderr = "";
      child.stderr.on("data", (chunk) => (stderr += chunk));
      child.on("close", (code) => resolve({ code, stderr }));
    });
    expect(installed.stderr).not.toMatch(/npm error/);
    expect(installed.code).toBe(0);
  }, 180_000);

  it("serves its tools to the SDK's client from `selfheal mcp` on PATH", async () => {
    const client = new Client({ name: "selfheal-readme-config", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: "selfheal",
        args: ["mcp", "--db", join(scratchDir("mcp-installed"), "checkpoints.db")],
        env: cleanEnv({ ...modelEnv(), PATH: path }) as Record<string, string>,
        cwd: scratchDir("cwd"),
        stderr: "pipe",
      }),
    );
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual(["list_runs", "resume", "run_history", "solve"]);
      const runs = await call(client, "list_runs", {});
      expect(runs.isError).toBeFalsy();
    } finally {
      await client.close();
    }
  });
});

describe("selfheal mcp --http beyond loopback", () => {
  it("makes a token, shows it once, and serves only the client that sends it", async () => {
    const child = spawn(
      process.execPath,
      [BIN, "mcp", "--http", "--host", "0.0.0.0", "--port", "0", "--db", join(scratchDir("mcp-token"), "runs.db")],
      {
        env: cleanEnv(modelEnv()),
        cwd: scratchDir("cwd"),
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    let stderr = "";
    child.stderr?.on("data", (chunk) => (stderr += chunk));
    try {
      await waitFor(() => /Bearer \S+\n/.test(stderr), "the token line");
      const url = new URL(/at (http:\/\/\S+)/.exec(stderr)![1]!.replace("0.0.0.0", "127.0.0.1"));
      const token = /Authorization: Bearer (\S+)\n/.exec(stderr)![1]!;
      expect(token.length).toBeGreaterThanOrEqual(40);
      const client = new Client({ name: "selfheal-token-test", version: "1.0.0" });
      await client.connect(
        new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
      );
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("solve");
      await client.close();
      const stranger = new Client({ name: "stranger", version: "1.0.0" });
      await expect(stranger.connect(new StreamableHTTPClientTransport(url))).rejects.toThrow(/401|nauthorized/);
    } finally {
      child.kill("SIGTERM");
      await new Promise((resolve) => child.once("exit", resolve));
    }
  }, 120_000);
});
