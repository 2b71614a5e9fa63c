import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCli, waitFor } from "./cli-helpers.js";
import { fence } from "./helpers.js";
import { type OpenAIStub, type StubAnswer, startOpenAIStub } from "./openai-stub.js";
import { scratchDir } from "./scratch.js";
import { startInTmux, type TmuxPane } from "./tmux.js";

// Ctrl-C typed into a real terminal (tmux), where the spinner is live: ora's signal-exit must not
// turn the keypress into death by signal before the run says how to continue.
const stubs: OpenAIStub[] = [];
const panes: TmuxPane[] = [];
afterEach(async () => {
  for (const pane of panes.splice(0)) pane.close();
  await Promise.all(stubs.splice(0).map((stub) => stub.close()));
});

async function ctrlCThenResume(
  answer: (index: number) => StubAnswer,
  pressWhen: (stub: OpenAIStub, pane: TmuxPane) => Promise<void>,
  extraArgs: string[] = [],
) {
  const dir = scratchDir("ctrl-c");
  const db = join(dir, "runs.db");
  const stub = await startOpenAIStub((_request, index) => answer(index));
  stubs.push(stub);
  const env = { OPENAI_BASE_URL: stub.url };
  const thread = `ctrl-c-${Date.now()}`;
  const pane = startInTmux(["run", "Print fine.", "--thread", thread, "--db", db, ...extraArgs], { env, cwd: dir });
  panes.push(pane);
  await pressWhen(stub, pane);
  pane.keys("C-c");
  expect(await pane.exitCode()).toBe(130);
  expect(pane.screen()).toContain(`stopped; the run is saved: continue it with \`selfheal resume ${thread} --db`);

  const resumed = await runCli(["resume", thread, "--db", db, "--json"], { env, cwd: dir });
  expect(resumed.code).toBe(0);
  return { stub, summary: JSON.parse(resumed.stdout) };
}

describe("Ctrl-C on a real terminal", () => {
  it("stops mid model call with exit 130 and the resume line, and resume finishes the run", async () => {
    const { stub, summary } = await ctrlCThenResume(
      (index) => (index === 0 ? { hang: true } : { content: fence("print('fine')") }),
      async (stub, pane) => {
        await pane.waitFor("attempt 1: writing a program", "the spinner of the generator's call");
        await waitFor(() => stub.requests.length === 1, "the generator's model call");
      },
    );
    expect(summary).toMatchObject({ status: "passed", attempt: 1 });
    expect(stub.requests).toHaveLength(2);
  });

  it("stops mid execution with exit 130 and the resume line, and resume finishes the run", async () => {
    // The first program prints, then sleeps past the execution timeout: resumed, that attempt
    // times out and the fixer's program passes.
    const { summary } = await ctrlCThenResume(
      (index) =>
        index === 0
          ? { content: fence("import time\nprint('started', flush=True)\ntime.sleep(60)") }
          : { content: fence("print('fine')") },
      (_stub, pane) => pane.waitFor("│ started", "the program's first line"),
      ["--timeout", "4000"],
    );
    expect(summary).toMatchObject({ status: "passed", attempt: 2 });
  });
});
