import { request } from "node:http";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ScriptedChatModel } from "../../src/index.js";
import { createMcpServer, MAX_REQUEST_BYTES, McpRuns, type McpRunsOptions, serveHttp } from "../../src/mcp/index.js";
import { artifactsFolder, openRunStore, type RunStore } from "../../src/store/index.js";
import { fence } from "../helpers/helpers.js";
import { scratchDir } from "../helpers/scratch.js";

// The MCP tools in one process, over the SDK's in-memory transport; the model is scripted.
// test/mcp/mcp.e2e.test.ts drives the real `selfheal mcp` over stdio and HTTP.

const opened: Array<{ store: RunStore; runs: McpRuns; client: Client }> = [];
afterEach(async () => {
  vi.unstubAllEnvs();
  for (const { store, runs, client } of opened.splice(0)) {
    await client.close();
    await runs.close();
    await store.close();
  }
});

async function connect(model?: ScriptedChatModel, serverSettings?: McpRunsOptions["serverSettings"]) {
  const store = await openRunStore({ kind: "sqlite", path: join(scratchDir("mcp"), "runs.db") });
  const runs = new McpRuns({ store, model, ...(serverSettings ? { serverSettings } : {}) });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createMcpServer(runs, { version: "test" }).connect(serverSide);
  const client = new Client({ name: "test", version: "1" });
  await client.connect(clientSide);
  opened.push({ store, runs, client });
  return { store, client };
}

const solve = async (client: Client, args: Record<string, unknown>) =>
  (await client.callTool({ name: "solve", arguments: args })) as CallToolResult;
const textOf = (result: CallToolResult) =>
  result.content.map((part) => (part.type === "text" ? part.text : "")).join("");

describe("the MCP tools", () => {
  it("run a task with the injected model and save the run as the CLI does", async () => {
    const model = new ScriptedChatModel([fence("print(1 / 0)"), fence("print(1)")]);
    const { store, client } = await connect(model);
    const result = await solve(client, { task: "Print one.", threadId: "one", settings: { sandbox: "process" } });
    expect(result.structuredContent).toMatchObject({
      threadId: "one",
      status: "passed",
      attempts: 2,
      code: "print(1)\n",
    });
    expect(textOf(result)).toMatch(/^passed after 2 attempt\(s\), \d+ tokens \(thread one\)/);
    const record = await store.getRun("one");
    expect(record).toMatchObject({ task: "Print one.", settings: { sandbox: "process" } });
    expect(record?.settings.artifactsDir).toBe(artifactsFolder(store.location));
  });

  it("lay the server's own settings (selfheal mcp --allow-host) over a run, and refuse them from a client", async () => {
    const model = new ScriptedChatModel([fence("print(1)")]);
    const { store, client } = await connect(model, { allowHosts: ["data.test:8080"] });
    const result = await solve(client, { task: "Print one.", threadId: "hosts", settings: { sandbox: "process" } });
    expect(result.structuredContent).toMatchObject({ status: "passed" });
    expect((await store.getRun("hosts"))?.settings.allowHosts).toEqual(["data.test:8080"]);
    const refused = await solve(client, { task: "Print one.", settings: { allowHosts: ["evil.test"] } });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toContain("allowHosts: set by the server, not by a client (selfheal mcp's own settings)");
  });

  it("refuse a second run in a thread that has one", async () => {
    const { client } = await connect(new ScriptedChatModel([fence("print(1)")]));
    await solve(client, { task: "Print one.", threadId: "taken", settings: { sandbox: "process" } });
    const again = await solve(client, { task: "Print two.", threadId: "taken" });
    expect(again).toMatchObject({ isError: true });
    expect(textOf(again)).toBe("thread taken already has a run; continue it with the resume tool");
  });

  it("refuse a setting given beside the task, and a misspelt field, naming them, before any model call", async () => {
    const { client, store } = await connect(new ScriptedChatModel([fence("print(1)")]));
    const setting = await solve(client, { task: "Print one.", maxAttempts: 1 });
    expect(setting.isError).toBe(true);
    expect(setting.content).toEqual([
      {
        type: "text",
        text: "\"maxAttempts\" is a setting, not a field of the input: give it with the settings (invoke's context, MCP's settings, a Studio assistant's context)",
      },
    ]);
    const misspelt = await solve(client, { task: "Print one.", test: "assert True" });
    expect(misspelt.content).toEqual([
      {
        type: "text",
        text: 'unknown input field "test" (did you mean tests?) (the input has task, language, tests, inputs, expect)',
      },
    ]);
    expect(await store.listRuns()).toEqual([]);
  });

  it("answer a missing input file before any model call", async () => {
    const model = new ScriptedChatModel([fence("print(1)")]);
    const { client } = await connect(model);
    const result = await solve(client, { task: "Sum a.csv.", inputs: { "a.csv": { path: "/no/such/a.csv" } } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe("input /no/such/a.csv: no such file");
    expect(model.prompts).toHaveLength(0);
  });

  it("answer with the missing model configuration when no model is set up", async () => {
    vi.stubEnv("OPENAI_API_KEY", "");
    vi.stubEnv("OPENAI_BASE_URL", "");
    const { client } = await connect();
    const result = await solve(client, { task: "Print one.", settings: { sandbox: "process" } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/^No model is configured\. Set OPENAI_API_KEY/);
  });

  it("answer bad arguments with the agent's own messages, naming each field", async () => {
    const model = new ScriptedChatModel([fence("print(1)")]);
    const { client } = await connect(model);
    const settings = await solve(client, { task: "Print one.", settings: { maxAttempts: 0 } });
    expect(settings).toMatchObject({ isError: true });
    expect(textOf(settings)).toBe(
      "MCP error -32602: Input validation error: Invalid arguments for tool solve: maxAttempts must be at least 1 at settings.maxAttempts",
    );
    const input = await solve(client, { task: " ", language: "cobol" });
    expect(textOf(input)).toBe(
      "MCP error -32602: Input validation error: Invalid arguments for tool solve: task must not be empty at task\nlanguage must be one of: python, javascript at language",
    );
    expect(model.prompts).toHaveLength(0);
  });

  it("refuse an argument or a setting no tool takes, by name, with the one it was probably meant to be", async () => {
    const model = new ScriptedChatModel([fence("print(1)")]);
    const { client, store } = await connect(model);
    const misspeltSetting = await solve(client, { task: "Print one.", settings: { maxAttemptz: 1 } });
    expect(misspeltSetting).toMatchObject({ isError: true });
    expect(textOf(misspeltSetting)).toBe('unknown setting "maxAttemptz" (did you mean maxAttempts?)');
    const call = async (name: string, args: Record<string, unknown>) =>
      textOf((await client.callTool({ name, arguments: args })) as CallToolResult);
    expect(await call("list_runs", { limt: 5 })).toBe(
      'list_runs has no argument "limt" (did you mean limit?) (it takes limit)',
    );
    expect(await call("run_history", { threadId: "t", verbose: true })).toBe(
      'run_history has no argument "verbose" (it takes threadId)',
    );
    expect(await call("resume", { threadId: "t", settings: { modle: "x" } })).toBe(
      'unknown setting "modle" (did you mean model?)',
    );
    // A folder the server writes or a package index is the server's to choose, not a client's.
    const serverOwn = await solve(client, {
      task: "Print one.",
      settings: { artifactsDir: "/etc", packageInstall: { pythonIndexUrl: "http://evil.example/simple" } },
    });
    expect(textOf(serverOwn)).toBe(
      "artifactsDir, packageInstall: set by the server, not by a client (selfheal mcp's own settings)",
    );
    expect(model.prompts).toHaveLength(0);
    expect(await store.listRuns()).toEqual([]);
  });
});

describe("the MCP server over HTTP", () => {
  /** POSTs `body` to `url` and returns the status and the body of the answer. */
  function post(url: string, body: string | Buffer): Promise<{ status?: number; text: string }> {
    return new Promise((resolve, reject) => {
      const req = request(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      });
      req.on("response", (response) => {
        let text = "";
        response.on("data", (chunk) => (text += chunk));
        response.on("end", () => resolve({ status: response.statusCode, text }));
      });
      req.on("error", reject);
      req.end(body);
    });
  }

  it("beyond loopback needs a bearer token, and refuses a client without it or with a wrong one before any work", async () => {
    const store = await openRunStore({ kind: "sqlite", path: join(scratchDir("mcp"), "runs.db") });
    const runs = new McpRuns({ store });
    await expect(serveHttp(runs, { version: "test" }, { host: "0.0.0.0", port: 0 })).rejects.toThrow(
      "serving MCP on 0.0.0.0, beyond this machine, needs a bearer token",
    );
    const token = "a-long-random-token-for-this-test";
    const server = await serveHttp(runs, { version: "test" }, { host: "0.0.0.0", port: 0, token });
    const url = new URL(server.url.replace("0.0.0.0", "127.0.0.1"));
    const connectWith = async (headers: Record<string, string>) => {
      const client = new Client({ name: "test", version: "1" });
      await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
      return client;
    };
    try {
      expect(server.loopback).toBe(false);
      const client = await connectWith({ Authorization: `Bearer ${token}` });
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("solve");
      await client.close();
      for (const headers of [{}, { Authorization: "Bearer wrong" }, { Authorization: token }] as Record<
        string,
        string
      >[]) {
        await expect(connectWith(headers), JSON.stringify(headers)).rejects.toThrow(/401|nauthorized/);
      }
      const bare = await post(server.url.replace("0.0.0.0", "127.0.0.1"), JSON.stringify({ jsonrpc: "2.0", id: 1 }));
      expect(bare.status).toBe(401);
      expect(JSON.parse(bare.text).error.message).toBe("unauthorized: send Authorization: Bearer <token>");
    } finally {
      await server.close();
      await runs.close();
      await store.close();
    }
  });

  it("asks for initialize first, and refuses a body past its bound without reading it all", async () => {
    const store = await openRunStore({ kind: "sqlite", path: join(scratchDir("mcp"), "runs.db") });
    const runs = new McpRuns({ store });
    const server = await serveHttp(runs, { version: "test" }, { host: "127.0.0.1", port: 0 });
    try {
      expect(server.loopback).toBe(true);
      const listing = await post(server.url, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }));
      expect(listing.status).toBe(400);
      expect(JSON.parse(listing.text).error.message).toBe("no session: the first request must be initialize");
      expect((await post(server.url, "{not json")).status).toBe(400);
      const huge = await post(server.url, Buffer.alloc(MAX_REQUEST_BYTES + 1, " "));
      expect(huge.status).toBe(413);
    } finally {
      await server.close();
      await runs.close();
      await store.close();
    }
  });
});
