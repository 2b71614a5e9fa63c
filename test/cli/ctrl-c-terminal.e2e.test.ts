import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BIN, REPO, runCli, waitFor } from "../helpers/cli-helpers.js";
import { fence } from "../helpers/helpers.js";
import { type OpenAIStub, type StubAnswer, startOpenAIStub } from "../helpers/openai-stub.js";
import { scratchDir } from "../helpers/scratch.js";
import { startInTmux, type TmuxPane } from "../helpers/tmux.js";

// Ctrl-C typed into a real terminal (tmux), where the spinner is live: ora's signal-exit must not
// turn the keypress into death by signal before the run says how to continue.
const stubs: OpenAIStub[] = [];
const panes: TmuxPane[] = [];
afterEach(async () => {
  for (const pane of panes.splice(0)) pane.close();
  await Promise.all(stubs.splice(0).map((stub) => stub.close()));
});

interface Launch {
  /** How the user starts the binary; `node <bin>` unless given. */
  launcher?: string[];
  cwd?: string;
  /** The words the resume line must start with, as the user can type them there. */
  resumeWith: string;
}

const byPath: Launch = { resumeWith: `node ${BIN}` };

/**
 * Ctrl-C, then the resume line the run printed, typed into the same terminal as printed: it must
 * be a command the user can type where they are (`selfheal` is not on PATH in a clone).
 */
async function ctrlCThenResume(
  answer: (index: number) => StubAnswer,
  pressWhen: (stub: OpenAIStub, pane: TmuxPane) => Promise<void>,
  extraArgs: string[] = [],
  launch: Launch = byPath,
) {
  const dir = scratchDir("ctrl-c");
  const db = join(dir, "runs.db");
  const stub = await startOpenAIStub((_request, index) => answer(index));
  stubs.push(stub);
  const env = { OPENAI_BASE_URL: stub.url };
  const thread = `ctrl-c-${Date.now()}`;
  const pane = startInTmux(["run", "Print fine.", "--thread", thread, "--db", db, ...extraArgs], {
    env,
    cwd: launch.cwd ?? dir,
    launcher: launch.launcher,
  });
  panes.push(pane);
  await pressWhen(stub, pane);
  pane.keys("C-c");
  expect(await pane.exitCode()).toBe(130);
  const printed = /continue it with `([^`]+)`/.exec(pane.screen())?.[1];
  expect(printed).toBe(`${launch.resumeWith} resume ${thread} --db ${db}`);

  pane.typeLine(`${printed}; echo "RESUMED=$?"`);
  await pane.waitFor(/RESUMED=\d+/, "the typed resume line to end", 90_000);
  expect(pane.screen()).toContain("RESUMED=0");
  const runs = await runCli(["runs", "--db", db, "--json"], { env, cwd: dir });
  const summary = (JSON.parse(runs.stdout) as Array<{ threadId: string }>).find((run) => run.threadId === thread);
  return { stub, summary };
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
    expect(summary).toMatchObject({ status: "passed", attempts: 1 });
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
    expect(summary).toMatchObject({ status: "passed", attempts: 2 });
  });
});

describe("the resume line in a clone is the command the user started it with", () => {
  const hangOnce = (index: number): StubAnswer => (index === 0 ? { hang: true } : { content: fence("print('fine')") });
  const midModelCall = async (stub: OpenAIStub, pane: TmuxPane) => {
    await pane.waitFor("attempt 1: writing a program", "the spinner of the generator's call");
    await waitFor(() => stub.requests.length === 1, "the generator's model call");
  };

  it.each([
    { launcher: ["npm", "run", "selfheal", "--"], resumeWith: "npm run selfheal --" },
    { launcher: ["npx", "selfheal"], resumeWith: "npx selfheal" },
  ])("$resumeWith", async (launch) => {
    const { summary } = await ctrlCThenResume(hangOnce, midModelCall, [], { ...launch, cwd: REPO });
    expect(summary).toMatchObject({ status: "passed", attempts: 1 });
  });
});
