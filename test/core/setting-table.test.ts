import { join } from "node:path";
import { getConfigTypeSchema } from "@langchain/langgraph/zod/schema";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Command } from "commander";
import { afterEach, describe, expect, it } from "vitest";
import { settingsWithFlags } from "../../src/cli/flag-settings.js";
import { addSettingOptions, settingsFromFlags } from "../../src/cli/options.js";
import { studioDeclaration } from "../../src/graph/studio-declaration.js";
import { createAgent } from "../../src/index.js";
import { SETTING_TABLE, SettingsSchema, type SettingTable, settingsSchemaOf } from "../../src/internal.js";
import { createMcpServer, McpRuns } from "../../src/mcp/index.js";
import { openRunStore } from "../../src/store/index.js";
import { scratchDir } from "../helpers/scratch.js";

// The setting table (src/core/setting-table.ts) is the one place a setting is declared: the CLI's
// flags, Studio's settings form and MCP's `solve` tool are all built from it.

type JsonSchema = { properties?: Record<string, JsonSchema>; [key: string]: unknown };

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** The JSON schema of the `solve` tool's settings, as an MCP client lists it from a server offering `table`. */
async function mcpSolveSettings(table: SettingTable): Promise<Record<string, JsonSchema>> {
  const store = await openRunStore({ kind: "sqlite", path: join(scratchDir("setting-table"), "runs.db") });
  const runs = new McpRuns({ store });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createMcpServer(runs, { version: "test" }, table).connect(serverSide);
  const client = new Client({ name: "test", version: "1" });
  await client.connect(clientSide);
  closers.push(
    () => store.close(),
    () => runs.close(),
    () => client.close(),
  );
  const { tools } = await client.listTools();
  const solve = tools.find((tool) => tool.name === "solve")?.inputSchema as JsonSchema;
  return solve.properties?.settings?.properties ?? {};
}

/** Studio's settings form: the context schema the dev server reads from a graph declared with `table`'s schema. */
function studioSettings(table: SettingTable): Record<string, JsonSchema> {
  const agent = createAgent({}, studioDeclaration(settingsSchemaOf(table)));
  return (getConfigTypeSchema(agent) as JsonSchema).properties ?? {};
}

/** `run --help` with its options built from `table`, each on one line. */
const cliHelp = (table: SettingTable): string =>
  addSettingOptions(new Command("run").configureHelp({ helpWidth: 400 }), table).helpInformation();

describe("a setting added to the table", () => {
  // A copy of the real table with two settings more: one any client may give, one the server's own.
  const table = {
    ...SETTING_TABLE,
    retryJitter: { kind: "integer", min: 0, max: 9, default: 3, help: "Seconds of jitter between retries" },
    scratchFolder: {
      kind: "text",
      default: null,
      help: "Where the server keeps scratch files",
      flag: "--scratch <dir>",
      serverOnly: true,
    },
  } as const satisfies SettingTable;

  it("is a flag of the CLI, with its help and default, read into the settings", () => {
    expect(cliHelp(table)).toMatch(/--retry-jitter <n>\s+seconds of jitter between retries \(0 to 9, default 3\)/);
    expect(cliHelp(table)).toMatch(/--scratch <dir>\s+where the server keeps scratch files/);
    const command = addSettingOptions(new Command("run").exitOverride(), table);
    command.parse(["--retry-jitter", "5", "--scratch", "/tmp/s"], { from: "user" });
    expect(settingsFromFlags(command.opts(), table)).toEqual({ retryJitter: 5, scratchFolder: "/tmp/s" });
  });

  it("is in Studio's settings form with its default, bounds and help", () => {
    const settings = studioSettings(table);
    expect(settings.retryJitter).toMatchObject({
      type: "integer",
      minimum: 0,
      maximum: 9,
      default: 3,
      description: "Seconds of jitter between retries",
    });
    expect(settings.scratchFolder).toMatchObject({
      default: null,
      description: "Where the server keeps scratch files",
    });
  });

  it("is in MCP's solve tool with its bounds and help, unless it is the server's own", async () => {
    const settings = await mcpSolveSettings(table);
    expect(settings.retryJitter).toMatchObject({
      type: "integer",
      minimum: 0,
      maximum: 9,
      description: "Seconds of jitter between retries",
    });
    expect(settings).not.toHaveProperty("scratchFolder");
  });
});

describe("the real table", () => {
  // Written down, not read from the table: a change to either list is a decision to make here.
  const WITHOUT_GENERIC_FLAG = ["approval", "artifactsDir", "packages", "packageInstall", "allowHosts"];
  const SERVER_ONLY = ["artifactsDir", "sandboxPoolSize", "packageInstall", "allowHosts"];

  it("gives every setting to Studio, and every one but the server's own to MCP", async () => {
    const every = Object.keys(SettingsSchema.shape);
    expect(Object.keys(studioSettings(SETTING_TABLE))).toEqual(every);
    expect(Object.keys(await mcpSolveSettings(SETTING_TABLE))).toEqual(
      every.filter((key) => !SERVER_ONLY.includes(key)),
    );
  });

  it("gives every setting a CLI flag but those a command declares itself or the CLI decides", () => {
    const command = addSettingOptions(new Command("run"), SETTING_TABLE);
    const flagged = command.options.map((option) => option.attributeName());
    const renamed: Record<string, string> = {
      timeout: "timeoutMs",
      modelTimeout: "modelTimeoutMs",
      sandboxPool: "sandboxPoolSize",
      storeWait: "storeWaitSeconds",
    };
    expect(flagged.map((name) => renamed[name] ?? name)).toEqual(
      Object.keys(SETTING_TABLE).filter((key) => !WITHOUT_GENERIC_FLAG.includes(key)),
    );
  });

  it("reads a --no- flag as given only when it is typed, so a resume keeps the stored value", () => {
    const parsed = (args: string[]) => {
      const command = addSettingOptions(new Command("run").exitOverride(), SETTING_TABLE);
      return command.parse(args, { from: "user" }).opts();
    };
    expect(settingsFromFlags(parsed([]))).toEqual({});
    expect(settingsFromFlags(parsed(["--no-runtime-values", "--trace-calls"]))).toEqual({
      runtimeValues: false,
      traceCalls: true,
    });
    expect(settingsWithFlags({ runtimeValues: false }, parsed([])).runtimeValues).toBe(false);
    expect(settingsWithFlags({}, parsed(["--temperature", "0.7"])).temperature).toBe(0.7);
    expect(() => settingsWithFlags({}, parsed(["--temperature", "3"]))).toThrow(
      "--temperature must be between 0 and 2 (got 3)",
    );
  });
});
