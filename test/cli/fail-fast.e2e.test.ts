import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkOutputFile } from "../../src/cli/stream-run.js";
import { checkSandbox, SandboxUnavailableError, UsageError } from "../../src/index.js";
import { type CliResult, runCli } from "../helpers/cli-helpers.js";
import { type OpenAIStub, startOpenAIStub } from "../helpers/openai-stub.js";

const scratch = mkdtempSync(join(tmpdir(), "selfheal-fail-fast-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let count = 0;
/** A fresh working directory, as a newcomer's checkout would be, with no store above it. */
function freshDir(): string {
  const dir = join(scratch, `cwd-${++count}`);
  mkdirSync(dir);
  return dir;
}

/** One line on stderr, exit 2, no stack trace: what a person can act on. */
function expectOneLineUsageError(result: CliResult, pattern: RegExp): void {
  expect(result.code).toBe(2);
  expect(result.stderr).toMatch(pattern);
  expect(result.stderr.trim().split("\n")).toHaveLength(1);
  expect(result.stderr).not.toMatch(/^\s+at /m);
}

describe("selfheal run fails fast, before any model call", () => {
  let stub: OpenAIStub;
  beforeAll(async () => {
    stub = await startOpenAIStub(() => ({ content: "```python\nprint(1)\n```" }));
  });
  afterAll(() => stub.close());

  const run = (args: string[], options: { cwd?: string; env?: Record<string, string> } = {}) =>
    runCli(["run", "print one", "--model", "stub-model", ...args], {
      cwd: options.cwd ?? freshDir(),
      env: { OPENAI_BASE_URL: stub.url, ...options.env },
    });

  it("stops with one line when --sandbox container has no engine daemon to talk to", async () => {
    const cwd = freshDir();
    // A socket that does not exist: the docker CLI cannot reach any daemon through it.
    const result = await run(["--sandbox", "container"], {
      cwd,
      env: { DOCKER_HOST: `unix://${join(scratch, "no-daemon.sock")}` },
    });
    expectOneLineUsageError(result, /the container sandbox cannot use docker: .*choose another sandbox/);
    expect(stub.requests).toHaveLength(0);
    expect(existsSync(join(cwd, ".selfheal"))).toBe(false);
  });

  it("stops with one line when --sandbox bwrap is asked for and bwrap cannot run here", async () => {
    // A PATH with no bwrap on it; node itself is started by its absolute path.
    const result = await run(["--sandbox", "bwrap"], { env: { PATH: join(scratch, "empty-path") } });
    expectOneLineUsageError(result, /the bwrap sandbox is not available: bubblewrap is not installed/);
    expect(stub.requests).toHaveLength(0);
  });

  it("stops with one line when --db is a directory, under /proc, or in a place that takes no files", async () => {
    const directory = freshDir();
    const regularFile = join(scratch, "a-file");
    writeFileSync(regularFile, "");
    const cases: Array<[string, RegExp]> = [
      [directory, /it is a directory/],
      ["/proc/selfheal-missing/runs.db", /cannot create the directory \/proc\/selfheal-missing/],
      // sysfs refuses new files, even to root: a read-only place whatever the permission bits say.
      ["/sys/selfheal-runs.db", /no database file can be created or opened there/],
      [join(regularFile, "runs.db"), /no database file can be created or opened there/],
    ];
    for (const [db, pattern] of cases) {
      const result = await run(["--db", db]);
      expectOneLineUsageError(
        result,
        new RegExp(
          `cannot open the SQLite run store at .*${pattern.source}.*give --db a file path in a writable directory`,
        ),
      );
    }
    expect(stub.requests).toHaveLength(0);
  });

  it("checks --out before the run, not after it when the result would be lost", async () => {
    const cwd = freshDir();
    const missing = await run(["--out", join(scratch, "no-such-dir", "result.json")], { cwd });
    expectOneLineUsageError(missing, /--out .*: the directory .*no-such-dir does not exist; create it first/);
    const underFile = join(scratch, "out-parent");
    writeFileSync(underFile, "");
    const notWritable = await run(["--out", join(underFile, "result.json")], { cwd });
    expectOneLineUsageError(notWritable, /--out .*: a part of .* is a file, not a directory/);
    const onSysfs = await run(["--out", "/sys/selfheal-result.json"], { cwd });
    expectOneLineUsageError(onSysfs, /--out .*: cannot create or write files in \/sys/);
    expect(stub.requests).toHaveLength(0);
    // Nothing was started, so nothing was stored.
    expect(existsSync(join(cwd, ".selfheal"))).toBe(false);
  });
});

describe("selfheal demo checks its sandbox first too", () => {
  it("stops with one line when --sandbox container has no engine daemon to talk to", async () => {
    const result = await runCli(["demo", "--sandbox", "container"], {
      cwd: freshDir(),
      env: { DOCKER_HOST: `unix://${join(scratch, "no-daemon.sock")}` },
    });
    expectOneLineUsageError(result, /the container sandbox cannot use docker/);
    expect(result.stderr).not.toMatch(/attempt/);
  });

  it("still falls back to the process backend under --sandbox auto when bwrap is missing", async () => {
    // A PATH holding only python3, so bwrap is not found but the program can still run.
    const pathDir = join(scratch, "python-only");
    mkdirSync(pathDir);
    const python = spawnSync("python3", ["-c", "import sys; print(sys.executable)"], {
      encoding: "utf8",
    }).stdout.trim();
    symlinkSync(python, join(pathDir, "python3"));
    const result = await runCli(["demo", "--sandbox", "auto"], { cwd: freshDir(), env: { PATH: pathDir } });
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/'process' sandbox, which is NOT isolation/);
    expect(result.stderr).toMatch(/✓ attempt 2 {2}passed/);
  });
});

describe("selfheal resume checks its sandbox and --out first too", () => {
  it("refuses to fork onto a container sandbox with no engine, and makes no new thread", async () => {
    const cwd = freshDir();
    const demo = JSON.parse((await runCli(["demo", "--json"], { cwd })).stdout) as { threadId: string };
    const history = JSON.parse((await runCli(["history", demo.threadId, "--json"], { cwd })).stdout) as Array<{
      node: string;
      checkpointId: string;
    }>;
    const afterFirstRun = history.find((row) => row.node === "executor")!.checkpointId;
    const env = { DOCKER_HOST: `unix://${join(scratch, "no-daemon.sock")}` };
    const fork = await runCli(["resume", demo.threadId, "--from", afterFirstRun, "--sandbox", "container"], {
      cwd,
      env,
    });
    expectOneLineUsageError(fork, /the container sandbox cannot use docker/);
    const out = await runCli(
      ["resume", demo.threadId, "--from", afterFirstRun, "--out", join(scratch, "no-such-dir", "r.json")],
      { cwd },
    );
    expectOneLineUsageError(out, /--out .*does not exist/);
    expect(JSON.parse((await runCli(["runs", "--json"], { cwd })).stdout)).toHaveLength(1);
  });
});

describe("read-only commands create no store", () => {
  it("`runs` says there are no runs and where it looked, and creates nothing", async () => {
    const cwd = freshDir();
    const text = await runCli(["runs"], { cwd });
    expect(text.code).toBe(0);
    expect(text.stdout).toBe(`no runs yet: there is no run store at ${join(cwd, ".selfheal", "checkpoints.db")}\n`);
    const json = await runCli(["runs", "--json"], { cwd });
    expect(JSON.parse(json.stdout)).toEqual([]);
    expect(readdirSync(cwd)).toEqual([]);
  });

  it("`history` and `resume` of an unknown thread exit 2 naming the store, and create nothing", async () => {
    const cwd = freshDir();
    for (const command of ["history", "resume"]) {
      const result = await runCli([command, "no-such-thread"], { cwd });
      expectOneLineUsageError(
        result,
        new RegExp(`no run with thread id no-such-thread in ${join(cwd, ".selfheal", "checkpoints.db")}`),
      );
    }
    expect(readdirSync(cwd)).toEqual([]);
  });

  it("`runs` and `history` from a subfolder see the runs of the folder above that has .selfheal/", async () => {
    const project = freshDir();
    const demo = await runCli(["demo", "--json"], { cwd: project });
    expect(demo.code).toBe(0);
    const { threadId } = JSON.parse(demo.stdout) as { threadId: string };
    const deep = join(project, "src", "deep");
    mkdirSync(deep, { recursive: true });
    const runs = await runCli(["runs", "--json"], { cwd: deep });
    expect(JSON.parse(runs.stdout)).toEqual([expect.objectContaining({ threadId, status: "passed" })]);
    const history = await runCli(["history", threadId], { cwd: deep });
    expect(history.code).toBe(0);
    expect(existsSync(join(deep, ".selfheal"))).toBe(false);
    // $SELFHEAL_DB still wins over the store found above.
    const elsewhere = await runCli(["runs", "--json"], { cwd: deep, env: { SELFHEAL_DB: "other.db" } });
    expect(JSON.parse(elsewhere.stdout)).toEqual([]);
  });
});

describe("the checks behind the CLI", () => {
  it("checkSandbox lets auto and process through, and rejects a container engine it cannot reach", async () => {
    await expect(checkSandbox({ kind: "auto" })).resolves.toBeUndefined();
    await expect(checkSandbox({ kind: "process" })).resolves.toBeUndefined();
    const saved = process.env.DOCKER_HOST;
    process.env.DOCKER_HOST = `unix://${join(scratch, "no-daemon.sock")}`;
    try {
      await expect(checkSandbox({ kind: "container" })).rejects.toBeInstanceOf(SandboxUnavailableError);
    } finally {
      if (saved === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = saved;
    }
  });

  it("checkOutputFile accepts a new file in a writable folder and leaves nothing behind", () => {
    const dir = freshDir();
    expect(() => checkOutputFile(join(dir, "result.json"))).not.toThrow();
    expect(readdirSync(dir)).toEqual([]);
    expect(() => checkOutputFile(dir)).toThrow(UsageError);
  });
});
