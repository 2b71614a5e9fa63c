import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  createAgent,
  createChatModel,
  createSandbox,
  InvalidSettingsError,
  MissingModelConfigError,
  parseSettings,
  SelfhealError,
  type SelfhealErrorCode,
  StoreConnectionError,
  ThreadBusyError,
} from "../../src/index.js";
import { openRunStore } from "../../src/store/index.js";
import { cleanEnv, freePort, REPO, runCli } from "../helpers/cli-helpers.js";
import { fence, scriptedModel } from "../helpers/helpers.js";

/** Runs `fn`, expecting it to throw a SelfhealError with `code`; returns the error for more checks. */
async function caught(code: SelfhealErrorCode, fn: () => unknown): Promise<SelfhealError> {
  try {
    await fn();
  } catch (error) {
    expect(error).toBeInstanceOf(SelfhealError);
    expect((error as SelfhealError).code).toBe(code);
    return error as SelfhealError;
  }
  throw new Error(`expected a ${code} error`);
}

const scratch = mkdtempSync(join(tmpdir(), "selfheal-errors-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("errors you can catch", () => {
  it("raises INVALID_SETTINGS from parseSettings and from a run with a bad context", async () => {
    const direct = await caught("INVALID_SETTINGS", () => parseSettings({ maxAttempts: 0 }));
    expect(direct).toBeInstanceOf(InvalidSettingsError);
    expect(direct.name).toBe("InvalidSettingsError");
    const model = scriptedModel(fence("print(1)"));
    const agent = createAgent({ model, sandbox: createSandbox({ kind: "process" }) });
    await caught("INVALID_SETTINGS", () => agent.invoke({ task: "x" }, { context: { maxAttempts: -1 } }));
  });

  it("raises INVALID_SETTINGS, one readable line, for a bad input from invoke and stream, naming a field it does not have", async () => {
    const agent = createAgent({ model: scriptedModel(), sandbox: createSandbox({ kind: "process" }) });
    const empty = await caught("INVALID_SETTINGS", () => agent.invoke({ task: "" }));
    expect(empty.message).toBe("task must not be empty");
    const language = await caught("INVALID_SETTINGS", () => agent.stream({ task: "x", language: "rust" } as never));
    expect(language.message).toBe("language must be one of: python, javascript");
    const setting = await caught("INVALID_SETTINGS", () => agent.invoke({ task: "x", maxAttempts: 1 } as never));
    expect(setting.message).toBe(
      "\"maxAttempts\" is a setting, not a field of the input: give it with the settings (invoke's context, MCP's settings, a Studio assistant's context)",
    );
    const misspelt = await caught("INVALID_SETTINGS", () => agent.invoke({ task: "x", test: "assert 1" } as never));
    expect(misspelt.message).toBe(
      'unknown input field "test" (did you mean tests?) (the input has task, language, tests, inputs, expect)',
    );
  });

  it("raises MISSING_MODEL_CONFIG when no model is configured", async () => {
    const error = await caught("MISSING_MODEL_CONFIG", () => createChatModel("gpt-4o-mini", { temperature: 0 }, {}));
    expect(error).toBeInstanceOf(MissingModelConfigError);
    expect(error.message).toContain("OPENAI_API_KEY");
  });

  it("raises SANDBOX_UNAVAILABLE when bwrap is asked for on a host without it", () => {
    // createSandbox returns at once and probes off the event loop: the preparation and every run
    // reject with the error (checkSandbox reports it before a run; see sandbox.test.ts).
    const script = [
      `import { createSandbox } from "./src/index.ts";`,
      `const sandbox = createSandbox({ kind: "bwrap" });`,
      `const seen = (error) => ({ name: error.name, code: error.code });`,
      `const prepared = await sandbox.prepare().then(() => "prepared", seen);`,
      `const ran = await sandbox.run({ language: "python", code: "print(1)" }).then(() => "ran", seen);`,
      `console.log(JSON.stringify({ prepared, ran }));`,
    ].join("\n");
    // A PATH with neither bwrap nor prlimit on it: node is started by its absolute path.
    const result = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: REPO,
      env: { ...cleanEnv(), PATH: scratch },
      encoding: "utf8",
    });
    const unavailable = { name: "SandboxUnavailableError", code: "SANDBOX_UNAVAILABLE" };
    expect(JSON.parse(result.stdout.trim())).toEqual({ prepared: unavailable, ran: unavailable });
  });

  it("raises THREAD_BUSY when another live process holds the thread", async () => {
    const path = join(scratch, "busy.db");
    const holderScript = [
      `import { openRunStore } from "./src/store/index.ts";`,
      `const store = await openRunStore({ kind: "sqlite", path: ${JSON.stringify(path)} });`,
      `await store.lease("thread-1");`,
      `console.log("held");`,
      `process.stdin.resume();`,
    ].join("\n");
    const holder = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", holderScript], {
      cwd: REPO,
      stdio: ["pipe", "pipe", "inherit"],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout.on("data", (chunk: Buffer) => chunk.toString().includes("held") && resolve());
        holder.once("exit", (code) => reject(new Error(`the lease holder exited with ${code}`)));
      });
      const store = await openRunStore({ kind: "sqlite", path });
      try {
        const error = await caught("THREAD_BUSY", () => store.lease("thread-1"));
        expect(error).toBeInstanceOf(ThreadBusyError);
      } finally {
        await store.close();
      }
    } finally {
      holder.kill("SIGKILL");
    }
  });

  it("raises STORE_CONNECTION, not INVALID_SETTINGS, for PostgreSQL on a closed port, without the password", async () => {
    const port = await freePort();
    const error = await caught("STORE_CONNECTION", () =>
      openRunStore({ kind: "postgres", url: `postgresql://u:secret-pw@127.0.0.1:${port}/db` }),
    );
    expect(error).toBeInstanceOf(StoreConnectionError);
    expect(error).not.toBeInstanceOf(InvalidSettingsError);
    expect(error.message).toContain(`127.0.0.1:${port}`);
    expect(error.message).not.toContain("secret-pw");
  });

  it("raises STORE_CONNECTION for a SQLite path that is a directory", async () => {
    const error = await caught("STORE_CONNECTION", () => openRunStore({ kind: "sqlite", path: scratch }));
    expect(error.message).toContain(scratch);
  });

  it("raises STORE_CONNECTION at once for a SQLite path under /proc, where a recursive mkdir never returns", async () => {
    await caught("STORE_CONNECTION", () => openRunStore({ kind: "sqlite", path: "/proc/selfheal-missing/runs.db" }));
  });

  it("makes the CLI print one line and exit 2 for an unreachable PostgreSQL and for --db on a directory", async () => {
    const port = await freePort();
    for (const args of [
      ["runs", "--postgres", `postgresql://u:secret-pw@127.0.0.1:${port}/db`],
      ["runs", "--db", scratch],
    ]) {
      const result = await runCli(args);
      expect(result.code).toBe(2);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(result.stderr).toMatch(/^selfheal: cannot (connect to PostgreSQL|open the SQLite run store)/);
      expect(result.stderr).not.toContain("secret-pw");
    }
  });
});
