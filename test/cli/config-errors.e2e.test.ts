import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { parseSettings } from "../../src/index.js";
import { openRunStore } from "../../src/store/index.js";
import { runCli } from "../helpers/cli-helpers.js";
import { containerEngineMissing } from "../helpers/container-engine.js";
import { startOpenAIStub } from "../helpers/openai-stub.js";
import { scratchDir } from "../helpers/scratch.js";

const CONTAINER_MISSING = containerEngineMissing();

// A configuration mistake is one line and exit 2 before anything is stored: no run record to
// resume, no resume hint, no model call.
function workspace() {
  const dir = scratchDir("config");
  return { dir, db: join(dir, "runs.db") };
}

describe("configuration errors up front", () => {
  it("refuses an OPENAI_BASE_URL that is not a URL, with exit 2 and no run saved", async () => {
    const { dir, db } = workspace();
    const result = await runCli(["run", "Print 1.", "--db", db], { env: { OPENAI_BASE_URL: "not-a-url" }, cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      'selfheal: OPENAI_BASE_URL must be an http(s) URL such as http://localhost:11434/v1, got "not-a-url"',
    );
    expect(existsSync(db)).toBe(false);
  });

  it("refuses an --input that names a directory, saying so, with exit 2 and no run saved", async () => {
    const { dir, db } = workspace();
    mkdirSync(join(dir, "data"));
    const result = await runCli(["run", "Sum the numbers.", "--input", "data", "--db", db], {
      env: { OPENAI_API_KEY: "not-needed" },
      cwd: dir,
    });
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      `selfheal: --input ${join(dir, "data")} is a folder; give a file (one --input per file)`,
    );
    expect(existsSync(db)).toBe(false);
  });

  it("refuses --token-budget 0, naming the flag, with exit 2 and no run saved", async () => {
    const { dir, db } = workspace();
    const result = await runCli(["run", "Print 1.", "--token-budget", "0", "--db", db], {
      env: { OPENAI_API_KEY: "not-needed" },
      cwd: dir,
    });
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe("selfheal: --token-budget must be at least 1 (got 0)");
    expect(existsSync(db)).toBe(false);
  });

  it("lists a store holding a run record whose settings cannot be read, marking that row, and fails only that thread", async () => {
    const { dir, db } = workspace();
    const store = await openRunStore({ kind: "sqlite", path: db });
    const createdAt = new Date().toISOString();
    await store.saveRun({ threadId: "good", task: "Print 1.", settings: parseSettings({}), createdAt });
    await store.close();
    // What an older version saved for `run --approve --candidates 2` before it checked the pair.
    const raw = new Database(db);
    raw
      .prepare("INSERT INTO selfheal_runs (thread_id, task, settings, created_at) VALUES (?, ?, ?, ?)")
      .run("poisoned", "count vowels", JSON.stringify({ approval: true, candidates: 2 }), createdAt);
    raw.close();

    const runs = await runCli(["runs", "--json", "--db", db], { cwd: dir });
    expect(runs.code, runs.stderr).toBe(0);
    const rows = JSON.parse(runs.stdout) as Array<{ threadId: string; status: string }>;
    expect(rows.map((row) => row.threadId).sort()).toEqual(["good", "poisoned"]);
    expect(rows.find((row) => row.threadId === "good")?.status).toBe("not started");
    expect(rows.find((row) => row.threadId === "poisoned")?.status).toBe(
      "not started (its stored settings cannot be read: approval works with one program at a time: set candidates to 1 to use it)",
    );
    const resumed = await runCli(["resume", "poisoned", "--db", db], {
      cwd: dir,
      env: { OPENAI_API_KEY: "not-needed" },
    });
    expect(resumed.code).toBe(2);
    expect(resumed.stderr.trim()).toBe(
      "selfheal: thread poisoned: its stored settings cannot be read: approval works with one program at a time: set candidates to 1 to use it",
    );
  });

  it("refuses a Python that does not start (--python or $SELFHEAL_PYTHON) before any model call, and doctor says so", async () => {
    const stub = await startOpenAIStub(() => ({ content: "never asked" }));
    try {
      const expected =
        "selfheal: python: /nope does not start, so Python programs cannot run: install Python 3, or name one with --python or $SELFHEAL_PYTHON (`selfheal doctor` lists those found)";
      for (const [args, env] of [
        [["--python", "/nope"], {}],
        [[], { SELFHEAL_PYTHON: "/nope" }],
      ] as const) {
        const { dir, db } = workspace();
        const result = await runCli(["run", "Print 1.", "--sandbox", "process", "--db", db, ...args], {
          env: { OPENAI_BASE_URL: stub.url, ...env },
          cwd: dir,
        });
        expect(result.code).toBe(2);
        expect(result.stderr.trim()).toBe(expected);
        expect(existsSync(db)).toBe(false);
      }
      expect(stub.requests).toHaveLength(0);
    } finally {
      await stub.close();
    }
    const doctor = await runCli(["doctor", "--sandbox", "process"], { env: { SELFHEAL_PYTHON: "/nope" } });
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toContain(
      "not ready:\n  - python: /nope does not start, so Python programs cannot run: install Python 3, or name one with --python or $SELFHEAL_PYTHON\n",
    );
  }, 120_000);

  it.skipIf(CONTAINER_MISSING !== null)(
    `refuses the container sandbox without its image here before any model call, and doctor says so${CONTAINER_MISSING ? ` (skipped: ${CONTAINER_MISSING})` : ""}`,
    async () => {
      const { dir, db } = workspace();
      const env = { OPENAI_API_KEY: "not-needed", SELFHEAL_CONTAINER_IMAGE: "selfheal-missing:none" };
      const result = await runCli(["run", "Print 1.", "--sandbox", "container", "--db", db], { env, cwd: dir });
      const expected =
        "the container sandbox has no image selfheal-missing:none here: `docker pull selfheal-missing:none`, or build one offline with scripts/build-container-image.sh and name it in SELFHEAL_CONTAINER_IMAGE; or choose another sandbox (auto, bwrap, process, gvisor)";
      expect(result.code).toBe(2);
      expect(result.stderr.trim()).toBe(`selfheal: ${expected}`);
      expect(existsSync(db)).toBe(false);
      const doctor = await runCli(["doctor", "--sandbox", "container"], { env });
      expect(doctor.code).toBe(1);
      expect(doctor.stdout).toContain(`not ready:\n  - ${expected}\n`);
    },
    120_000,
  );

  it("says what cancel is for when the store is SQLite, where there is no queue", async () => {
    const { dir, db } = workspace();
    const result = await runCli(["cancel", "some-thread", "--db", db], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      "selfheal: cancel stops runs given to the queue (`selfheal submit`, which needs the PostgreSQL store: --postgres URL or $SELFHEAL_POSTGRES_URL); a run started with `selfheal run` stops with Ctrl-C in its terminal, and `resume` continues it",
    );
    expect(existsSync(db)).toBe(false);
  });

  // Issue 38: this one used to be checked only after the run record was saved, and the record then
  // failed every later listing of the store.
  it("refuses --approve with --candidates 2 before anything is saved", async () => {
    const { dir, db } = workspace();
    const result = await runCli(["run", "count vowels", "--approve", "--candidates", "2", "--db", db], {
      env: { OPENAI_API_KEY: "not-needed" },
      cwd: dir,
    });
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      "selfheal: approval works with one program at a time: set candidates to 1 to use it",
    );
    expect(existsSync(db)).toBe(false);
  });
});
