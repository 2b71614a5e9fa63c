import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { COMMANDS } from "../../src/cli/commands/catalog.js";
import { listRuns } from "../../src/cli/commands/runs.js";
import { createAgent, createSandbox, parseSettings, ScriptedChatModel } from "../../src/index.js";
import { openRunStore } from "../../src/store/index.js";
import { indexOfStore } from "../../src/store/run-index.js";
import { openSqliteIndex } from "../../src/store/sqlite-file.js";
import { cleanEnv, REPO, runCli } from "../helpers/cli-helpers.js";
import { fence } from "../helpers/helpers.js";
import { scratchDir } from "../helpers/scratch.js";

/** Module hooks that append every resolved URL to the file named in `data.log`. */
const RECORDER = `
import { appendFileSync } from "node:fs";
let log;
export function initialize(data) { log = data.log; }
export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  appendFileSync(log, resolved.url + "\\n");
  return resolved;
}`;

/** The script that imports `entry` (as the CLI's bin with `argv`, if given) and logs what it loads to `log`. */
function recordingScript(entry: string, log: string, dir: string, argv?: string[], use?: string): string {
  return [
    `import { register } from "node:module";`,
    `register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(RECORDER)}`)}, { data: { log: ${JSON.stringify(log)} } });`,
    ...(argv ? [`process.argv = ${JSON.stringify([process.execPath, entry, ...argv])};`] : []),
    `const entry = await import(${JSON.stringify(entry)});`,
    ...(use ? [`const dir = ${JSON.stringify(dir)};`, use] : []),
  ].join("\n");
}

/** The npm packages the log names, and the files of src/ it names as `src/...`. */
function packagesIn(log: string): Set<string> {
  const packages = new Set<string>();
  const srcFolder = pathToFileURL(join(REPO, "src")).href;
  for (const url of readFileSync(log, "utf8").split("\n")) {
    const name = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1];
    if (name) packages.add(name);
    else if (url.startsWith(`${srcFolder}/`)) packages.add(`src/${url.slice(srcFolder.length + 1)}`);
  }
  return packages;
}

const nodeArgs = (script: string) => ["--import", "tsx", "--input-type=module", "-e", script];
const recordingEnv = () => ({ PATH: cleanEnv().PATH ?? "" });

/**
 * Imports `entry` in a fresh Node process and returns the npm packages it loaded; with `argv`, as
 * the CLI's bin with those arguments (the process exits when the command ends); with `use`, after
 * running that code with the entry's exports as `entry` and a scratch folder as `dir`.
 */
function packagesLoadedBy(entry: string, argv?: string[], use?: string, exitCode: number | null = 0): Set<string> {
  const dir = mkdtempSync(join(tmpdir(), "selfheal-imports-"));
  const log = join(dir, "resolved.txt");
  try {
    const result = spawnSync(process.execPath, nodeArgs(recordingScript(entry, log, dir, argv, use)), {
      cwd: REPO,
      env: recordingEnv(),
      encoding: "utf8",
    });
    if (exitCode === 0) expect(result.stderr).toBe("");
    if (exitCode !== null) expect(result.status, result.stderr).toBe(exitCode);
    return packagesIn(log);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** packagesLoadedBy for the CLI's bin with `argv`, in a process that runs beside the others a test starts. */
async function packagesLoadedByAsync(entry: string, argv: string[], exitCode: number): Promise<Set<string>> {
  const dir = mkdtempSync(join(tmpdir(), "selfheal-imports-"));
  const log = join(dir, "resolved.txt");
  try {
    const child = spawn(process.execPath, nodeArgs(recordingScript(entry, log, dir, argv)), {
      cwd: REPO,
      env: recordingEnv(),
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    const [status] = (await once(child, "close")) as [number | null];
    expect(status, `${argv.join(" ")}: ${stderr}`).toBe(exitCode);
    if (exitCode === 0) expect(stderr, argv.join(" ")).toBe("");
    else expect(stderr, argv.join(" ")).toMatch(/^selfheal: [^\n]+\n$/);
    return packagesIn(log);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const DATABASE_PACKAGES = [
  "better-sqlite3",
  "pg",
  "@langchain/langgraph-checkpoint-sqlite",
  "@langchain/langgraph-checkpoint-postgres",
];

describe("the package entries", () => {
  it("load the agent from the root entry without any database driver, and build no graph", () => {
    const loaded = packagesLoadedBy("./src/index.ts");
    expect(loaded).toContain("@langchain/langgraph");
    expect(loaded).toContain("src/graph/build.ts");
    for (const name of DATABASE_PACKAGES) expect(loaded).not.toContain(name);
    // The module behind langgraph.json builds the Studio graph when it loads; the root does not load it.
    expect(loaded).not.toContain("src/graph/studio.ts");
    expect(packagesLoadedBy("./src/graph/studio.ts")).toContain("src/graph/studio.ts");
  });

  it("load each database driver only when the store entry opens a store of its kind", () => {
    const imported = packagesLoadedBy("./src/store/index.ts");
    for (const name of DATABASE_PACKAGES) expect(imported).not.toContain(name);

    const sqlite = packagesLoadedBy(
      "./src/store/index.ts",
      undefined,
      `const store = await entry.openRunStore({ kind: "sqlite", path: dir + "/runs.db" });\nawait store.close();`,
    );
    expect(sqlite).toContain("better-sqlite3");
    expect(sqlite).toContain("@langchain/langgraph-checkpoint-sqlite");
    expect(sqlite).not.toContain("pg");
    expect(sqlite).not.toContain("@langchain/langgraph-checkpoint-postgres");

    const postgres = packagesLoadedBy("./src/store/postgres.ts");
    expect(postgres).toContain("pg");
    expect(postgres).toContain("@langchain/langgraph-checkpoint-postgres");
    expect(postgres).not.toContain("better-sqlite3");
  });

  it("load pg-boss only with the queue entry", () => {
    expect(packagesLoadedBy("./src/index.ts")).not.toContain("pg-boss");
    expect(packagesLoadedBy("./src/store/index.ts")).not.toContain("pg-boss");
    expect(packagesLoadedBy("./src/queue/index.ts")).toContain("pg-boss");
  });

  it("run the benchmark without loading the run store", () => {
    const loaded = packagesLoadedBy("./src/benchmark/index.ts");
    expect(loaded).toContain("@langchain/langgraph");
    for (const name of DATABASE_PACKAGES) expect(loaded).not.toContain(name);
  });

  it("load vitest with no entry: the testing suites take the test functions from the test file", () => {
    expect(packagesLoadedBy("./src/index.ts")).not.toContain("vitest");
    expect(packagesLoadedBy("./src/cli/main.ts")).not.toContain("vitest");
    expect(packagesLoadedBy("./src/testing/index.ts")).not.toContain("vitest");
  });

  it("load the MCP SDK only with the mcp entry, not with the agent or the CLI", () => {
    expect(packagesLoadedBy("./src/index.ts")).not.toContain("@modelcontextprotocol/sdk");
    expect(packagesLoadedBy("./src/cli/main.ts")).not.toContain("@modelcontextprotocol/sdk");
    expect(packagesLoadedBy("./src/mcp/index.ts")).toContain("@modelcontextprotocol/sdk");
  });
});

describe("the CLI's start", () => {
  const HEAVY = [
    "@langchain/langgraph",
    "@langchain/core",
    "@langchain/openai",
    "zod",
    "pg-boss",
    ...DATABASE_PACKAGES,
  ];

  it("loads no agent, schema or database package for --version and --help", () => {
    for (const argv of [["--version"], ["--help"]]) {
      const loaded = packagesLoadedBy("./src/cli/bin.ts", argv);
      expect(loaded, argv[0]).toContain("commander");
      for (const name of HEAVY) expect(loaded, `${argv[0]} loaded ${name}`).not.toContain(name);
    }
  });

  /** A usage error of each command, written down: the CLI must find each before anything heavy loads. */
  const USAGE_ERRORS: Record<string, string[][]> = {
    run: [["run"], ["run", "x", "--max-attempts", "2.5"]],
    resume: [["resume"], ["resume", "t", "--bogus"]],
    history: [["history"]],
    runs: [["runs", "--limit", "0"]],
    report: [["report"]],
    submit: [["submit", "x", "--priority", "1.5"]],
    worker: [["worker", "--concurrency", "0"]],
    cancel: [["cancel"]],
    demo: [["demo", "--sandbox", "nowhere"]],
    bench: [["bench", "--strategy", "guess"]],
    doctor: [["doctor", "--bogus"]],
    mcp: [["mcp", "--port", "x"]],
  };

  it("finds every command's usage error, and shows its help, before the schema, the graph, LangChain or a store load", async () => {
    expect(Object.keys(USAGE_ERRORS).sort()).toEqual(COMMANDS.map((entry) => entry.name).sort());
    const cases = Object.entries(USAGE_ERRORS).flatMap(([name, errors]) => [
      { argv: [name, "--help"], exitCode: 0 },
      ...errors.map((argv) => ({ argv, exitCode: 2 })),
    ]);
    // Started together: each is a process of its own, and the suite's time is the slowest one's.
    const loaded = await Promise.all(
      cases.map(({ argv, exitCode }) => packagesLoadedByAsync("./src/cli/bin.ts", argv, exitCode)),
    );
    for (const [index, { argv }] of cases.entries()) {
      for (const name of HEAVY) expect(loaded[index], `${argv.join(" ")} loaded ${name}`).not.toContain(name);
    }
  });

  it("lists ended runs from SQLite alone, without LangChain, and as the checkpointer reads them", async () => {
    const dir = scratchDir("runs-store");
    const db = join(dir, "runs.db");
    const store = await openRunStore({ kind: "sqlite", path: db });
    const sandbox = createSandbox({ kind: "process" });
    try {
      const passing = createAgent({
        model: new ScriptedChatModel([fence("print(1)")]),
        sandbox,
        checkpointer: store.checkpointer,
      });
      await passing.invoke({ task: "Print 1." }, { configurable: { thread_id: "finished" } });
      const failing = createAgent({
        model: new ScriptedChatModel([fence("raise SystemExit(3)")]),
        sandbox,
        checkpointer: store.checkpointer,
      });
      await failing.invoke(
        { task: "Exit 0." },
        { configurable: { thread_id: "failed" }, context: parseSettings({ maxAttempts: 1 }) },
      );
    } finally {
      await sandbox.close();
      await store.close();
    }
    const loaded = packagesLoadedBy("./src/cli/bin.ts", ["runs", "--db", db]);
    expect(loaded).toContain("better-sqlite3");
    for (const name of [
      "@langchain/langgraph",
      "@langchain/langgraph-checkpoint",
      "@langchain/core",
      "@langchain/openai",
      "pg-boss",
    ])
      expect(loaded, `runs loaded ${name}`).not.toContain(name);

    // A run paused for approval has not ended: the graph says so, and loads for it.
    const again = await openRunStore({ kind: "sqlite", path: db });
    try {
      const agent = createAgent({
        model: new ScriptedChatModel([fence("print(2)")]),
        checkpointer: again.checkpointer,
      });
      await agent.invoke(
        { task: "Print 2." },
        { configurable: { thread_id: "paused" }, context: parseSettings({ approval: true }) },
      );
      // The file read alone, and the checkpointer, list the same rows.
      const fileIndex = openSqliteIndex({ kind: "sqlite", path: db }, () => openRunStore({ kind: "sqlite", path: db }));
      const fromFile = await listRuns(fileIndex, 50).finally(() => fileIndex.close());
      const fromCheckpointer = await listRuns(indexOfStore(again), 50);
      expect(fromFile).toEqual(fromCheckpointer);
      expect(fromFile.map((row) => [row.threadId, row.status, row.attempts, row.task])).toEqual([
        ["paused", "awaiting approval", 0, "Print 2."],
        ["failed", "failed", 1, "Exit 0."],
        ["finished", "passed", 1, "Print 1."],
      ]);
      expect(fromFile.every((row) => row.tokens > 0 || row.threadId === "paused")).toBe(true);
    } finally {
      await again.close();
    }
    const listed = await runCli(["runs", "--db", db, "--json"]);
    const statuses = Object.fromEntries(
      (JSON.parse(listed.stdout) as Array<{ threadId: string; status: string }>).map((row) => [
        row.threadId,
        row.status,
      ]),
    );
    expect(statuses).toEqual({ finished: "passed", failed: "failed", paused: "awaiting approval" });
  });

  it("loads the command a person runs and not the others: doctor needs no store, no queue, no report", () => {
    // Its help loads nothing of its work; the work itself (ready or not here) loads no store either.
    const help = packagesLoadedBy("./src/cli/bin.ts", ["doctor", "--help"]);
    for (const name of HEAVY) expect(help, `doctor --help loaded ${name}`).not.toContain(name);
    const loaded = packagesLoadedBy("./src/cli/bin.ts", ["doctor", "--json"], undefined, null);
    expect(loaded).toContain("zod");
    for (const name of ["pg-boss", "highlight.js", "chart.js", ...DATABASE_PACKAGES])
      expect(loaded).not.toContain(name);
  });
});
