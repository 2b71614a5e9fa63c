import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { askForApproval } from "../../src/cli/approval-prompt.js";
import type { ApprovalRequest } from "../../src/index.js";
import { BIN, runCli, runInTerminal } from "../helpers/cli-helpers.js";
import { fence } from "../helpers/helpers.js";
import { type OpenAIStub, startOpenAIStub } from "../helpers/openai-stub.js";
import { scratchDir } from "../helpers/scratch.js";

describe("approval across processes, without a terminal", () => {
  let stub: OpenAIStub;
  const dir = scratchDir("approval");
  const db = join(dir, "runs.db");
  beforeAll(async () => {
    stub = await startOpenAIStub((_request, index) =>
      index === 0
        ? { content: fence("print('the api key is', 'sk-123')"), usage: { prompt_tokens: 90, completion_tokens: 20 } }
        : { content: fence("print('the api key is set')"), usage: { prompt_tokens: 140, completion_tokens: 20 } },
    );
  });
  afterAll(() => stub.close());

  it("exits 3 awaiting approval, feeds a rejection to the fixer, and finishes once approved", async () => {
    const env = { OPENAI_BASE_URL: stub.url };
    const thread = `approval-${Date.now()}`;

    const paused = await runCli(
      [
        "run",
        "Say whether the api key is set.",
        "--approve",
        "--thread",
        thread,
        "--db",
        db,
        "--sandbox",
        "process",
        "--json",
      ],
      {
        env,
      },
    );
    expect(paused.code).toBe(3);
    expect(paused.stderr).toContain(`awaiting approval of attempt 1 in thread ${thread}`);
    expect(paused.stderr).toContain(`node ${BIN} resume ${thread}`);
    expect(JSON.parse(paused.stdout)).toMatchObject({
      status: "awaiting_approval",
      threadId: thread,
      attempt: 0,
      approval: { kind: "approval", attempt: 1, code: expect.stringContaining("sk-123") },
    });

    // Asked again with no decision and still no terminal: it stays paused.
    const undecided = await runCli(["resume", thread, "--db", db], { env });
    expect(undecided.code).toBe(3);
    expect(undecided.stdout).toContain("sk-123");
    // The same attempt number as the approval line above, not the count of attempts run so far.
    expect(undecided.stderr).toContain("(0 attempts run; next: approval of attempt 1)");
    expect(undecided.stderr).toContain(`awaiting approval of attempt 1 in thread ${thread}`);
    expect(stub.requests).toHaveLength(1);

    const rejected = await runCli(["resume", thread, "--db", db, "--reject", "never print secrets"], { env });
    expect(rejected.code).toBe(3);
    expect(stub.requests).toHaveLength(2);
    expect(stub.requests[1]?.messages.at(-1)?.content).toContain("never print secrets");
    // Without --json the program waiting for approval is what goes to stdout.
    expect(rejected.stdout).toContain("the api key is set");
    expect(rejected.stderr).toContain(`awaiting approval of attempt 2 in thread ${thread}`);

    const approved = await runCli(["resume", thread, "--db", db, "--approve", "--json"], { env });
    expect(approved.code).toBe(0);
    const summary = JSON.parse(approved.stdout);
    expect(summary).toMatchObject({ status: "passed", attempt: 2, threadId: thread });
    expect(summary.history[0]).toMatchObject({ attempt: 1, outcome: "Rejected" });
    expect(summary.errors[0]).toMatchObject({ type: "Rejected", message: "never print secrets" });
    expect(stub.requests).toHaveLength(2);

    const again = await runCli(["resume", thread, "--db", db, "--approve"], { env });
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/is not waiting for approval \(it has ended\)/);
  });

  it("runs the program from --edit instead of the model's, and refuses to start a thread twice", async () => {
    const env = { OPENAI_BASE_URL: stub.url };
    const thread = `approval-edit-${Date.now()}`;
    const paused = await runCli(
      ["run", "Say whether the api key is set.", "--approve", "--thread", thread, "--db", db, "--sandbox", "process"],
      { env },
    );
    expect(paused.code).toBe(3);

    const again = await runCli(["run", "Another task.", "--thread", thread, "--db", db], { env });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(`thread ${thread} already has a run`);

    const edited = join(dir, "edited.py");
    writeFileSync(edited, "print('edited by a person')\n");
    const resumed = await runCli(["resume", thread, "--db", db, "--edit", edited, "--json"], { env });
    expect(resumed.code).toBe(0);
    const summary = JSON.parse(resumed.stdout);
    expect(summary).toMatchObject({ status: "passed", attempt: 1, code: "print('edited by a person')\n" });
    expect(summary.history[0]).toMatchObject({ node: "human", outcome: "passed" });
  });
});

describe("approval in a terminal", () => {
  let stub: OpenAIStub;
  beforeAll(async () => {
    stub = await startOpenAIStub((_request, index) => ({
      content: fence(index === 0 ? "print('first try')" : "print('second try')"),
    }));
  });
  afterAll(() => stub.close());

  it("shows each program and takes approve or reject-with-reason from the keyboard, as single keys", async () => {
    const db = join(scratchDir("tty"), "runs.db");
    const question = "decide later (q)? ";
    // A key with no Enter; then `r` with the reason typed straight on, before its prompt shows.
    const result = await runInTerminal(
      ["run", "Print a line.", "--approve", "--db", db, "--sandbox", "process"],
      [
        { after: question, type: "x" },
        { after: "press a, r, e or q", type: "rnot this one\r" },
        { after: "the changes since attempt 1:", type: "a" },
      ],
      { env: { OPENAI_BASE_URL: stub.url } },
    );
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("attempt 1 wants to run this python program");
    expect(result.stdout).toContain("1 | print('first try')");
    expect(result.stdout).toContain("rejected: not this one");
    // The second time, what changed since the rejected program, as a coloured unified diff.
    expect(result.stdout).toContain("the changes since attempt 1:");
    expect(result.stdout).toContain("\x1b[31m-print('first try')\x1b[39m");
    expect(result.stdout).toContain("\x1b[32m+print('second try')\x1b[39m");
    expect(result.stdout).toContain("approved: running it");
    expect(result.stdout).toMatch(/passed after 2 attempts/);
    expect(stub.requests[1]?.messages.at(-1)?.content).toContain("not this one");
  });

  it("exits 130 on Ctrl-C at the prompt, and the run waits to be resumed", async () => {
    const db = join(scratchDir("tty"), "runs.db");
    const thread = `ctrl-c-${Date.now()}`;
    const env = { OPENAI_BASE_URL: stub.url };
    const result = await runInTerminal(
      ["run", "Print a line.", "--approve", "--thread", thread, "--db", db, "--sandbox", "process"],
      [{ after: "decide later (q)? ", type: "\x03" }],
      { env },
    );
    expect(result.code).toBe(130);
    expect(result.stdout).toContain(`stopped; the run is saved: continue it with \`node ${BIN} resume ${thread} --db`);
    const resumed = await runCli(["resume", thread, "--db", db, "--approve", "--json"], { env });
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ status: "passed", attempt: 1 });
  });
});

describe("the approval prompt", () => {
  const request: ApprovalRequest = { kind: "approval", attempt: 2, language: "python", code: "print(1 / 0)\n" };

  function session(answers: string) {
    const input = new PassThrough();
    const output = new PassThrough();
    let shown = "";
    output.on("data", (chunk) => (shown += chunk));
    input.end(answers);
    return { input, output, shown: () => shown };
  }

  it("shows the numbered program and asks for a reason when rejecting", async () => {
    const io = session("x\nr\n\nprints a traceback\n");
    const decision = await askForApproval(request, { ...io, editor: "false" });
    expect(decision).toEqual({ action: "reject", reason: "prints a traceback" });
    expect(io.shown()).toContain("attempt 2 wants to run this python program");
    expect(io.shown()).toContain("1 | print(1 / 0)");
    expect(io.shown()).toContain("answer a, r, e or q");
    expect(io.shown()).toContain("a rejection needs a reason");
  });

  it("returns the program as saved in the editor", async () => {
    const dir = scratchDir("editor");
    const editor = join(dir, "editor.mjs");
    // A stand-in for vim: rewrites the file it is given, as a person would.
    writeFileSync(
      editor,
      `import { writeFileSync } from "node:fs";\nwriteFileSync(process.argv[2], "print(1 / 2)\\n");\n`,
    );
    const io = session("e\n");
    const decision = await askForApproval(request, {
      ...io,
      editor: `${JSON.stringify(process.execPath)} ${JSON.stringify(editor)}`,
    });
    expect(decision).toEqual({ action: "edit", code: "print(1 / 2)\n" });
  });

  it("shows what changed since the attempt before as a unified diff", async () => {
    const io = session("a\n");
    const decision = await askForApproval(
      request,
      { ...io, editor: "false" },
      { previousCode: "x = 0\nprint(1 / x)\n" },
    );
    expect(decision).toEqual({ action: "approve" });
    expect(io.shown()).toContain(
      [
        "attempt 2 wants to run this python program; the changes since attempt 1:",
        "--- attempt 1",
        "+++ attempt 2",
        "@@ -1,2 +1,1 @@",
        "-x = 0",
        "-print(1 / x)",
        "+print(1 / 0)",
      ].join("\n"),
    );
    expect(io.shown()).not.toMatch(/\x1b\[/);
  });

  it("answers interrupted when SIGINT aborts the run while it asks", async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    const controller = new AbortController();
    const pending = askForApproval(request, { input, output, editor: "false" }, { signal: controller.signal });
    controller.abort();
    expect(await pending).toBe("interrupted");
  });

  it("asks again when the editor fails, and leaves the run waiting when the input ends", async () => {
    const io = session("e\n");
    const decision = await askForApproval(request, { ...io, editor: "false" });
    expect(decision).toBe("later");
    expect(io.shown()).toMatch(/the editor \(false\) exited with code 1; nothing changed/);
  });
});
