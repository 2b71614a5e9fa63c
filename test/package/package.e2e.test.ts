import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanEnv, REPO } from "../helpers/cli-helpers.js";

// Slow (about a minute and a half on two busy cores): packs the real tarball, installs it into a
// fresh application and compiles that application with strict settings, as a user of selfheal would.

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment without model settings nor the npm_* variables of an enclosing `npm test`. */
const ENV = Object.fromEntries(Object.entries(cleanEnv()).filter(([name]) => !name.startsWith("npm_")));

function run(command: string, args: string[], cwd: string): Promise<Finished> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env: ENV, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : null) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * A consumer's strict settings. `skipLibCheck: false` checks every declaration the app reaches,
 * selfheal's included, in an app that has no @types/better-sqlite3 nor @types/pg.
 */
const TSCONFIG = {
  compilerOptions: {
    target: "ES2022",
    module: "NodeNext",
    moduleResolution: "NodeNext",
    strict: true,
    noUncheckedIndexedAccess: true,
    skipLibCheck: false,
    types: ["node"],
    rootDir: "src",
    outDir: "dist",
  },
  include: ["src"],
};

/** The first program divides by zero on an empty list; the repair passes. */
const APP = `
import { createAgent, createSandbox, parseSettings, ScriptedChatModel, type AgentState } from "selfheal";
import type { RunStore, StoreLocation } from "selfheal/store";
import type { QueueState } from "selfheal/queue";

const fence = (code: string): string => "\`\`\`python\\n" + code + "\\n\`\`\`";
const model = new ScriptedChatModel([
  fence("def mean(xs):\\n    return sum(xs) / len(xs)\\n\\nprint(mean([]))"),
  fence("def mean(xs):\\n    return sum(xs) / len(xs) if xs else None\\n\\nprint(mean([]))"),
]);
const agent = createAgent({ model, sandbox: createSandbox({ kind: "process" }) });
const result: AgentState = await agent.invoke(
  { task: "Write mean(xs); the mean of [] is None." },
  { context: parseSettings({ maxAttempts: 3 }) },
);

function kindOf(store: Pick<RunStore, "location">): StoreLocation["kind"] {
  return store.location.kind;
}
const { resolveStoreLocation } = await import("selfheal/store");
const { loadDataset } = await import("selfheal/bench");
const { DEFAULT_QUEUE_SCHEMA } = await import("selfheal/queue");
const { McpRuns, createMcpServer } = await import("selfheal/mcp");
const finished: QueueState = "finished";

console.log(JSON.stringify({
  status: result.status,
  attempt: result.attempt,
  stdout: result.lastRun?.stdout,
  storeKind: kindOf({ location: resolveStoreLocation({ db: "runs.db" }, {}, "/") }),
  loadDataset: typeof loadDataset,
  queue: DEFAULT_QUEUE_SCHEMA + " " + finished,
  mcp: typeof McpRuns + " " + typeof createMcpServer,
}));
`;

describe("the packed package, installed into a strict TypeScript application", () => {
  let temp: string;
  let app: string;
  let compiled: Finished;

  beforeAll(async () => {
    temp = mkdtempSync(join(tmpdir(), "selfheal-package-"));
    app = join(temp, "app");
    const packed = await run("npm", ["pack", "--pack-destination", temp], REPO);
    expect(packed.stderr).not.toMatch(/npm error/);
    expect(packed.code).toBe(0);
    const tarball = readdirSync(temp).find((name) => name.endsWith(".tgz"));
    expect(tarball).toBeDefined();

    mkdirSync(join(app, "src"), { recursive: true });
    writeFileSync(
      join(app, "package.json"),
      JSON.stringify({ name: "selfheal-consumer", private: true, type: "module" }),
    );
    writeFileSync(join(app, "tsconfig.json"), JSON.stringify(TSCONFIG, null, 2));
    writeFileSync(join(app, "src", "app.ts"), APP);

    // From the npm cache that the repository's own install filled, so no download in the usual
    // case. --ignore-scripts: better-sqlite3 would compile its addon for minutes, and the app
    // must run without it, since the root entry never loads the store.
    const typesNode = JSON.parse(readFileSync(join(REPO, "node_modules", "@types", "node", "package.json"), "utf8"))
      .version as string;
    const installed = await run(
      "npm",
      [
        "install",
        "--prefer-offline",
        "--no-audit",
        "--no-fund",
        "--ignore-scripts",
        join(temp, tarball!),
        `@types/node@${typesNode}`,
      ],
      app,
    );
    expect(installed.stderr).not.toMatch(/npm error/);
    expect(installed.code).toBe(0);

    compiled = await run(process.execPath, [join(REPO, "node_modules", "typescript", "bin", "tsc"), "-p", "."], app);
  }, 600_000);

  afterAll(() => {
    if (temp) rmSync(temp, { recursive: true, force: true });
  });

  it("compiles with strict settings and skipLibCheck off, importing the agent and the store's types", () => {
    expect(compiled.stdout).toBe("");
    expect(compiled.code).toBe(0);
  });

  it("runs with plain Node: the scripted program fails, is repaired on the process sandbox and passes", async () => {
    const ran = await run(process.execPath, [join("dist", "app.js")], app);
    expect(ran.code).toBe(0);
    expect(JSON.parse(ran.stdout)).toEqual({
      status: "passed",
      attempt: 2,
      stdout: "None\n",
      storeKind: "sqlite",
      loadDataset: "function",
      queue: "selfheal_queue finished",
      mcp: "function function",
    });
  });

  it("ships the compiled code without its TypeScript source", () => {
    const selfheal = join(app, "node_modules", "selfheal");
    expect(existsSync(join(selfheal, "dist", "index.d.ts"))).toBe(true);
    expect(existsSync(join(selfheal, "src"))).toBe(false);
  });

  it("runs its selfheal command from the compiled CLI", async () => {
    const help = await run(join(app, "node_modules", ".bin", "selfheal"), ["--help"], app);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage: selfheal");
    // The version comes from the installed package.json, two levels above dist/cli/.
    const version = await run(join(app, "node_modules", ".bin", "selfheal"), ["--version"], app);
    expect(version.stdout).toBe(
      `${JSON.parse(readFileSync(join(app, "node_modules", "selfheal", "package.json"), "utf8")).version}\n`,
    );
  });
});
