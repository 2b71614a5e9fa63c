import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli-helpers.js";
import { fence } from "../helpers/helpers.js";
import { startOpenAIStub } from "../helpers/openai-stub.js";
import { scratchDir } from "../helpers/scratch.js";

// The CLI's --record and --replay, through the real binary against the local OpenAI-compatible server.

const SECRET = "sk-test-SECRET-0123456789";
const TASK = "Print bob's score; he may be missing from the table.";

const filesIn = (dir: string) => readdirSync(dir).map((name) => readFileSync(join(dir, name), "utf8"));

describe("selfheal run --record / --replay", () => {
  it("records a CLI run with --record and replays it with --replay and no model configured", async () => {
    const dir = join(scratchDir("calls"), "calls");
    const stub = await startOpenAIStub((request) =>
      request.messages.some((message) => message.content.includes("KeyError"))
        ? { content: fence("scores = {'ann': 3}\nprint('bob scored', scores.get('bob', 0))") }
        : { content: fence("scores = {'ann': 3}\nprint('bob scored', scores['bob'])") },
    );
    const args = ["run", TASK, "--sandbox", "process", "--json", "--db", join(scratchDir("db"), "runs.db")];
    const modelEnv = { OPENAI_BASE_URL: stub.url, OPENAI_API_KEY: SECRET, SELFHEAL_MODEL_RETRIES: "0" };
    const recorded = await runCli([...args, "--record", dir], { env: modelEnv });
    expect(recorded.code, recorded.stderr).toBe(0);
    // SELFHEAL_RECORD does what --record does.
    const viaEnv = join(scratchDir("calls"), "env");
    expect((await runCli(args, { env: { ...modelEnv, SELFHEAL_RECORD: viaEnv } })).code).toBe(0);
    await stub.close();

    const replayed = await runCli([...args, "--replay", dir]);
    expect(replayed.code, replayed.stderr).toBe(0);
    // The thread and the folders its artifacts go to are new; everything the run did is the same.
    const withoutPlaces = (stdout: string) => {
      const { threadId: _thread, artifacts, history, ...rest } = JSON.parse(stdout);
      const attempts = history.map(({ artifactsFolder: _folder, ...entry }: { artifactsFolder?: string }) => entry);
      return { ...rest, history: attempts, artifactFiles: artifacts?.files };
    };
    const first = withoutPlaces(recorded.stdout);
    const second = withoutPlaces(replayed.stdout);
    expect(second).toEqual(first);
    expect(second).toMatchObject({ status: "passed", attempt: 2 });
    expect(filesIn(viaEnv)).toEqual(filesIn(dir));
    for (const text of filesIn(dir)) expect(text).not.toContain(SECRET);

    // Replayed with another model: the miss names the recording's model, and the hint speaks of the
    // recording, not of a model server to wait for.
    const otherModel = await runCli([...args, "--replay", dir, "--model", "qwen2.5-coder:7b"]);
    expect(otherModel.code).toBe(1);
    expect(otherModel.stderr).toContain(
      `it was recorded with "gpt-4o-mini", and this run asks "qwen2.5-coder:7b": replay with the model it was recorded with (--model on the CLI)`,
    );
    expect(otherModel.stderr).toContain(
      "a replay answers only the requests that were recorded: replay with the task and settings of the recorded run, or record this one anew with --record and a model",
    );
    expect(otherModel.stderr).not.toMatch(/model server|OPENAI_BASE_URL/);

    const nowhere = join(scratchDir("calls"), "never-recorded");
    const missing = await runCli([...args, "--replay", nowhere]);
    expect(missing).toMatchObject({ code: 2, stderr: `selfheal: no recorded model calls at ${nowhere}\n` });
  }, 240_000);
});
