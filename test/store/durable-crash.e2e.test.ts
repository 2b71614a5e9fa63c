import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BIN, freePort, runCli, startCli, waitFor } from "../helpers/cli-helpers.js";
import { fence } from "../helpers/helpers.js";
import { type OpenAIStub, startOpenAIStub } from "../helpers/openai-stub.js";
import { scratchDir } from "../helpers/scratch.js";

// End to end through the real binary: a process is killed with SIGKILL mid-run, and a new
// process picks the run up from the SQLite checkpoints.
const stubs: OpenAIStub[] = [];
afterEach(async () => {
  await Promise.all(stubs.splice(0).map((stub) => stub.close()));
});

function workspace() {
  const dir = scratchDir("crash");
  return { dir, db: join(dir, "runs.db"), log: join(dir, "executions.log") };
}

/** Each execution appends a line to `log`, so the test can count how often each attempt really ran. */
const program = (log: string, body: string) =>
  fence(`with open(${JSON.stringify(log)}, "a") as log:\n    log.write("ran\\n")\n${body}`);

describe("durable runs: crash and resume", () => {
  it("resumes a run killed with SIGKILL mid-way in a new process without repeating a finished step", async () => {
    const { dir, db, log } = workspace();
    const stub = await startOpenAIStub((_request, index) => {
      if (index === 0)
        return { content: program(log, "print(10 / 0)"), usage: { prompt_tokens: 100, completion_tokens: 30 } };
      // The fixer's first call hangs: the process is killed while it waits.
      if (index === 1) return { content: program(log, "print(10 / 2)"), delayMs: 120_000 };
      return { content: program(log, "print(10 / 2)"), usage: { prompt_tokens: 150, completion_tokens: 30 } };
    });
    stubs.push(stub);
    const env = { OPENAI_BASE_URL: stub.url };
    const thread = `crash-${Date.now()}`;

    const first = startCli(["run", "Print ten halved.", "--thread", thread, "--db", db, "--sandbox", "process"], {
      env,
      cwd: dir,
    });
    await waitFor(() => stub.requests.length === 2, "the fixer's model call");
    expect(first.stderr()).toContain(`thread ${thread}`);
    first.child.kill("SIGKILL");
    const killed = await first.done;
    expect(killed.code).toBeNull();

    const resumed = await runCli(["resume", thread, "--db", db, "--json"], { env, cwd: dir });
    expect(resumed.code).toBe(0);
    expect(resumed.stderr).toMatch(/resuming at step \d+ \(1 attempt run; next: the fixer writes attempt 2\)/);
    const summary = JSON.parse(resumed.stdout);
    expect(summary).toMatchObject({ status: "passed", attempt: 2, threadId: thread });
    expect(summary.code).toContain("print(10 / 2)");

    // One generator call, the fixer call that died with the process, and its retry: nothing else.
    expect(stub.requests).toHaveLength(3);
    expect(stub.requests[0]?.messages.at(-1)?.content).not.toContain("ZeroDivisionError");
    expect(stub.requests[2]?.messages).toEqual(stub.requests[1]?.messages);
    // Attempt 1 ran once before the crash, attempt 2 once after it.
    expect(readFileSync(log, "utf8")).toBe("ran\nran\n");
    // The killed call never answered, so only the two answered calls are on the ledger.
    expect(summary.usage).toMatchObject({ calls: 2, inputTokens: 250, outputTokens: 60 });
  });

  it("stops on Ctrl-C with exit 130, keeps the run, and resume finishes it", async () => {
    const { dir, db } = workspace();
    const stub = await startOpenAIStub((_request, index) =>
      index === 1
        ? { content: fence("print('fine')"), delayMs: 120_000 }
        : { content: fence(index === 0 ? "print(1 / 0)" : "print('fine')") },
    );
    stubs.push(stub);
    const env = { OPENAI_BASE_URL: stub.url };
    const thread = `ctrl-c-${Date.now()}`;
    const running = startCli(["run", "Print fine.", "--thread", thread, "--db", db, "--sandbox", "process"], {
      env,
      cwd: dir,
    });
    await waitFor(() => stub.requests.length === 2, "the fixer's model call");
    running.child.kill("SIGINT");
    const stopped = await running.done;
    expect(stopped.code).toBe(130);
    expect(stopped.stderr).toContain(`stopped; the run is saved: continue it with \`node ${BIN} resume ${thread} --db`);

    const resumed = await runCli(["resume", thread, "--db", db, "--json"], { env, cwd: dir });
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ status: "passed", attempt: 2 });
    expect(stub.requests).toHaveLength(3);
  });

  it("ends as model_error when the server is unreachable, and resume continues once it answers", async () => {
    const { dir, db } = workspace();
    const port = await freePort();
    const env = { OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`, SELFHEAL_MODEL_RETRIES: "1" };
    const thread = `unreachable-${Date.now()}`;

    const down = await runCli(["run", "Print ok.", "--thread", thread, "--db", db, "--sandbox", "process", "--json"], {
      env,
      cwd: dir,
    });
    expect(down.code).toBe(1);
    expect(JSON.parse(down.stdout)).toMatchObject({
      status: "model_error",
      reason: expect.stringContaining(
        `generator model call failed: could not connect to the server at ${env.OPENAI_BASE_URL} (ECONNREFUSED)`,
      ),
    });
    expect(down.stderr).toContain(`node ${BIN} resume ${thread}`);

    // The server comes up on that port; its first answer is a 500, which the client retries.
    const stub = await startOpenAIStub(
      (_request, index) =>
        index === 0
          ? { status: 500 }
          : { content: fence("print('ok')"), usage: { prompt_tokens: 80, completion_tokens: 9 } },
      { port },
    );
    stubs.push(stub);
    const resumed = await runCli(["resume", thread, "--db", db, "--json"], { env, cwd: dir });
    expect(resumed.code).toBe(0);
    expect(resumed.stderr).toMatch(/retrying the generator call/);
    expect(JSON.parse(resumed.stdout)).toMatchObject({
      status: "passed",
      attempt: 1,
      usage: { calls: 1, inputTokens: 80 },
    });
    expect(stub.requests).toHaveLength(2);
  });
});
