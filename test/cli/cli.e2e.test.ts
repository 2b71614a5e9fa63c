import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_FIXED_CODE } from "../../src/cli/demo-model.js";
import { runCli, runInTerminal } from "../helpers/cli-helpers.js";
import { type OpenAIStub, startOpenAIStub } from "../helpers/openai-stub.js";
import { scratchDir } from "../helpers/scratch.js";

const fence = (code: string) => `\`\`\`python\n${code}\n\`\`\``;

describe("selfheal demo", () => {
  // Each test stores its runs in a directory of its own, as a newcomer's checkout would.
  const freshDir = () => scratchDir("demo");

  it("shows a real crash, a fix and a pass with no API key, and says the model is scripted", async () => {
    const result = await runCli(["demo"], { cwd: freshDir() });
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/SCRIPTED/);
    expect(result.stderr).toContain("model scripted-demo (scripted, no API key)");
    expect(result.stderr).toMatch(
      /^✗ attempt 1 {2}ZeroDivisionError: division by zero {2}\(\d+ ms, \d+ tokens so far\)$/m,
    );
    expect(result.stderr).toMatch(/^✓ attempt 2 {2}passed {2}\(\d+ ms, \d+ tokens so far\)$/m);
    expect(result.stderr).toMatch(/^✓ passed after 2 attempts {2}\d+ tokens/m);
    // Off a terminal: plain lines, no spinner, no colour, and stdout is exactly the program.
    expect(result.stderr).not.toMatch(/\x1b\[/);
    expect(result.stdout).toBe(DEMO_FIXED_CODE);
  });

  it("colours its progress and spins on a terminal, and puts the final program under a heading", async () => {
    const result = await runInTerminal(["demo", "--db", join(freshDir(), "runs.db")], []);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/\x1b\[32m✓\x1b\[39m \x1b\[1mattempt 2\x1b\[22m {2}passed/);
    // ora's frames, redrawn in place, with the elapsed time of the running step.
    // (ora colours the frame itself, except where CI is set: its colour check says no there.)
    expect(result.stdout).toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏](?:\x1b\[39m)? attempt \d: \w[\w ]*\x1b\[2m\(\d+\.\d s\)/);
    expect(result.stdout).toContain("── final program (attempt 2, passed) ──");
    expect(result.stdout.replaceAll("\r\n", "\n")).toContain(DEMO_FIXED_CODE);
  });

  it("prints a JSON result with --json", async () => {
    const dir = freshDir();
    const result = await runCli(["demo", "--json"], { cwd: dir });
    expect(result.code).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(summary).toMatchObject({ status: "passed", attempt: 2 });
    expect(summary.errors).toEqual([expect.objectContaining({ type: "ZeroDivisionError", count: 1 })]);
    expect(summary.usage.byNode).toHaveProperty("generator");
    expect(summary.usage.byNode).toHaveProperty("fixer");
    expect(summary.code).toBe(DEMO_FIXED_CODE);

    // Checkpointed in the embedded SQLite store: listed by `runs`, and forkable with no key.
    const runs = await runCli(["runs", "--json"], { cwd: dir });
    expect(JSON.parse(runs.stdout)).toEqual([
      expect.objectContaining({ threadId: summary.threadId, status: "passed" }),
    ]);
    const history = JSON.parse((await runCli(["history", summary.threadId, "--json"], { cwd: dir })).stdout) as Array<{
      node: string;
      checkpointId: string;
    }>;
    const afterFirstRun = history.find((row) => row.node === "executor");
    const fork = await runCli(["resume", summary.threadId, "--from", afterFirstRun!.checkpointId, "--json"], {
      cwd: dir,
    });
    expect(fork.code).toBe(0);
    expect(JSON.parse(fork.stdout)).toMatchObject({ status: "passed", attempt: 2, code: DEMO_FIXED_CODE });
  });
});

describe("selfheal report", () => {
  it("writes the run's HTML report at the end of a run with --report, and again from the store later", async () => {
    const dir = scratchDir("report");
    const first = join(dir, "at-end.html");
    const result = await runCli(["demo", "--json", "--report", first], { cwd: dir });
    expect(result.code).toBe(0);
    const { threadId } = JSON.parse(result.stdout);
    expect(result.stderr).toContain(`wrote the run report to ${first}`);
    const atEnd = readFileSync(first, "utf8");
    expect(atEnd.match(/<tr class="attempt-row/g)).toHaveLength(2);
    expect(atEnd).toContain(threadId);
    expect(atEnd).toContain("scripted-demo");

    // No desktop here: --open says so and the command still succeeds.
    const later = join(dir, "later.html");
    const report = await runCli(["report", threadId, "--out", later, "--open"], {
      cwd: dir,
      // An empty PATH: no xdg-open to find (the CLI itself starts from process.execPath).
      env: { PATH: scratchDir("empty-path"), DISPLAY: ":0" },
    });
    expect(report.code).toBe(0);
    expect(report.stderr).toContain(`wrote the report of ${threadId} to ${later}`);
    expect(report.stderr).toMatch(/cannot open it here: xdg-open is not installed/);
    expect(readFileSync(later, "utf8").match(/<tr class="attempt-row/g)).toHaveLength(2);

    // xdg-open there, but no display to open on: said, not left to xdg-open to fail unseen.
    const bin = scratchDir("bin");
    const opened = join(dir, "opened.txt");
    const opener = (exitCode: number) =>
      writeFileSync(join(bin, "xdg-open"), `#!/bin/sh\necho "$1" > ${opened}\nexit ${exitCode}\n`, { mode: 0o755 });
    opener(0);
    const path = `${bin}:${process.env.PATH}`;
    const headless = await runCli(["report", threadId, "--out", later, "--open"], { cwd: dir, env: { PATH: path } });
    expect(headless.code).toBe(0);
    expect(headless.stderr).toContain(
      `selfheal: cannot open it here: there is no display ($DISPLAY and $WAYLAND_DISPLAY are unset); open ${later} in a browser\n`,
    );
    expect(existsSync(opened)).toBe(false);
    // A display: xdg-open gets the file; when it fails, its exit code is said.
    const shown = await runCli(["report", threadId, "--out", later, "--open"], {
      cwd: dir,
      env: { PATH: path, DISPLAY: ":0" },
    });
    expect(shown.stderr).not.toMatch(/open/);
    expect(readFileSync(opened, "utf8")).toBe(`${later}\n`);
    opener(3);
    const failing = await runCli(["report", threadId, "--out", later, "--open"], {
      cwd: dir,
      env: { PATH: path, DISPLAY: ":0" },
    });
    expect(failing.code).toBe(0);
    expect(failing.stderr).toContain(`selfheal: xdg-open could not open ${later} (exit code 3)\n`);
  });

  it("writes the report of a fork made by resume --from --report, starting from the copied checkpoint", async () => {
    const dir = scratchDir("report");
    const { threadId } = JSON.parse((await runCli(["demo", "--json"], { cwd: dir })).stdout);
    const history = JSON.parse((await runCli(["history", threadId, "--json"], { cwd: dir })).stdout) as Array<{
      node: string;
      checkpointId: string;
    }>;
    const afterFirstRun = history.find((row) => row.node === "executor")!;
    const out = join(dir, "fork.html");
    const fork = await runCli(
      ["resume", threadId, "--from", afterFirstRun.checkpointId, "--thread", "the-fork", "--report", out],
      { cwd: dir },
    );
    expect(fork.code).toBe(0);
    expect(fork.stderr).toContain(`wrote the run report to ${out}`);
    const html = readFileSync(out, "utf8");
    expect(html).toContain("the-fork");
    expect(html.match(/<tr class="attempt-row/g)).toHaveLength(2);
  });

  it("exits 2 and names the store for a thread it does not have", async () => {
    const dir = scratchDir("report");
    await runCli(["demo"], { cwd: dir });
    const result = await runCli(["report", "no-such-thread", "--out", join(dir, "r.html")], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/no run with thread id no-such-thread in /);
    expect(existsSync(join(dir, "r.html"))).toBe(false);
  });
});

describe("selfheal run: usage and configuration errors exit 2", () => {
  it("explains how to configure a model when none is set", async () => {
    const result = await runCli(["run", "print hello"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/OPENAI_API_KEY/);
    expect(result.stderr).toMatch(/OPENAI_BASE_URL=http:\/\/localhost:11434\/v1/);
  });

  it("names the flag of an invalid setting, and the value given", async () => {
    const attempts = await runCli(["run", "x", "--max-attempts", "0"], { env: { OPENAI_API_KEY: "k" } });
    expect(attempts.code).toBe(2);
    expect(attempts.stderr).toBe("selfheal: --max-attempts must be at least 1 (got 0)\n");
    const budget = await runCli(["run", "x", "--token-budget", "-5"], { env: { OPENAI_API_KEY: "k" } });
    expect(budget.code).toBe(2);
    expect(budget.stderr).toMatch(/--token-budget must be at least 1 \(got -5\)/);
  });

  it("shows a bad argument and a pointer to the command's help, not the whole help", async () => {
    const result = await runCli(["run", "x", "--max-attempts", "x"], { env: { OPENAI_API_KEY: "k" } });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'selfheal: --max-attempts must be a whole number (got "x") (see `selfheal run --help`)\n',
    );
    const unknown = await runCli(["rnu"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe("selfheal: unknown command 'rnu' (Did you mean run?) (see `selfheal --help`)\n");
    // The help of an unknown command: the same line, not the whole help.
    const helpOfUnknown = await runCli(["help", "rnu"]);
    expect(helpOfUnknown.code).toBe(2);
    expect(helpOfUnknown.stderr).toBe(unknown.stderr);
  });

  it("says every usage error in one style, one line, exit 2, whoever found it", async () => {
    const dir = scratchDir("usage");
    mkdirSync(join(dir, "tests"));
    const env = { OPENAI_API_KEY: "k" };
    const cases: Array<[string[], string]> = [
      // Number("1e1") is 10 and Number("") is 0: neither is a whole number as a person types one.
      [
        ["run", "x", "--max-attempts", "1e1"],
        'selfheal: --max-attempts must be a whole number (got "1e1") (see `selfheal run --help`)',
      ],
      [
        ["run", "x", "--max-attempts", "2.5"],
        'selfheal: --max-attempts must be a whole number (got "2.5") (see `selfheal run --help`)',
      ],
      [
        ["run", "x", "--timeout", ""],
        'selfheal: --timeout must be a whole number (got "") (see `selfheal run --help`)',
      ],
      [["run", "x", "--max-attempts"], "selfheal: --max-attempts needs a value (see `selfheal run --help`)"],
      [
        ["run", "x", "--sandbox", "nope"],
        'selfheal: --sandbox must be one of auto, bwrap, process, container, gvisor (got "nope") (see `selfheal run --help`)',
      ],
      [["run"], "selfheal: missing required argument 'task' (see `selfheal run --help`)"],
      [["run", "x", "--bogus"], "selfheal: unknown option '--bogus' (see `selfheal run --help`)"],
      [
        ["run", "x", "-l", "cobol"],
        'selfheal: --language must be one of python, javascript (got "cobol") (see `selfheal run --help`)',
      ],
      [
        ["runs", "--limit", "0x10"],
        'selfheal: --limit must be a whole number of at least 1 (got "0x10") (see `selfheal runs --help`)',
      ],
      [["run", "x", "--max-attempts", "0"], "selfheal: --max-attempts must be at least 1 (got 0)"],
      [["run", "x", "--tests", join(dir, "tests")], `selfheal: --tests ${join(dir, "tests")} is a folder; give a file`],
      [["run", "x", "--tests", join(dir, "none.py")], `selfheal: --tests ${join(dir, "none.py")}: no such file`],
      [["run", "x", "--input", join(dir, "none.csv")], `selfheal: --input ${join(dir, "none.csv")}: no such file`],
      [["resume", "t", "--approve", "--reject", "no"], "selfheal: give only one of --approve, --reject or --edit"],
    ];
    // Each its own process, started together: they share nothing.
    const results = await Promise.all(cases.map(([args]) => runCli(args, { env, cwd: dir })));
    for (const [index, [args, line]] of cases.entries()) {
      const result = results[index]!;
      expect({ args, code: result.code, stderr: result.stderr }).toEqual({ args, code: 2, stderr: `${line}\n` });
    }
  });

  it("says in the help of run how to point it at a model", async () => {
    const help = await runCli(["run", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("OPENAI_API_KEY=sk-...");
    expect(help.stdout).toContain("OPENAI_BASE_URL=http://localhost:11434/v1");
    expect(help.stdout).toContain("selfheal demo");
  });

  it("prints the package's version", async () => {
    const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
    const result = await runCli(["--version"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${manifest.version}\n`);
  });

  it("rejects an empty task and an unknown language", async () => {
    const empty = await runCli(["run", "  "], { env: { OPENAI_API_KEY: "k" } });
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/task must not be empty/);
    const language = await runCli(["run", "x", "--language", "cobol"], { env: { OPENAI_API_KEY: "k" } });
    expect(language.code).toBe(2);
    expect(language.stderr).toMatch(/language/);
  });
});

describe("selfheal run against an OpenAI-compatible server", () => {
  let stub: OpenAIStub;
  beforeAll(async () => {
    stub = await startOpenAIStub((_request, index) =>
      index === 0
        ? {
            content: fence("def inc(x):\n    return x + 2\n\nprint(inc(1))"),
            usage: { prompt_tokens: 120, completion_tokens: 30 },
          }
        : {
            content: fence("def inc(x):\n    return x + 1\n\nprint(inc(1))"),
            usage: { prompt_tokens: 200, completion_tokens: 25 },
          },
    );
  });
  afterAll(() => stub.close());

  it("fails on the tests, fixes the program, and records the server's token usage", async () => {
    const dir = scratchDir("cli");
    const testsFile = join(dir, "tests.py");
    writeFileSync(testsFile, "assert inc(1) == 2\nassert inc(-1) == 0\n");
    const out = join(dir, "result.json");
    const result = await runCli(
      ["run", "Write inc(x) that adds one.", "--tests", testsFile, "--json", "--out", out, "--model", "stub-model"],
      {
        env: { OPENAI_BASE_URL: stub.url },
      },
    );
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(`model stub-model at ${stub.url}`);
    // Which sandbox ran the programs, the one auto picked.
    expect(result.stderr).toMatch(
      /^sandbox bwrap \(picked by auto\): memory, processes, cpu, disk, syscalls limited for the whole run$/m,
    );
    expect(result.stderr).toMatch(
      /^✗ attempt 1 {2}AssertionError: failed check at line \d+: inc\(1\) returned 3, expected 2 {2}\(/m,
    );
    expect(result.stderr).toMatch(/^✓ attempt 2 {2}passed/m);
    expect(result.stderr).toContain(
      "\n✓ passed after 2 attempts  375 tokens (320 in, 55 out), 2 model calls; tests in their own process\n",
    );
    expect(result.stderr).toContain(`wrote the JSON result to ${out}`);
    const summary = JSON.parse(readFileSync(out, "utf8"));
    expect(summary).toMatchObject({ status: "passed", attempt: 2 });
    expect(summary.usage).toMatchObject({ inputTokens: 320, outputTokens: 55, totalTokens: 375, calls: 2 });
    expect(stub.requests.map((request) => request.model)).toEqual(["stub-model", "stub-model"]);
    expect(stub.requests[1]?.messages.at(-1)?.content).toContain("AssertionError");
    expect(stub.requests[0]?.max_tokens).toBeGreaterThan(0);
  });
});

describe("selfheal run --candidates", () => {
  let stub: OpenAIStub;
  beforeAll(async () => {
    const programs = ["print(1 + 2)", "print(3)", "print(2 + 2)"];
    stub = await startOpenAIStub((_request, index) => ({
      content: fence(programs[index % programs.length]!),
      usage: { prompt_tokens: 100, completion_tokens: 10 },
    }));
  });
  afterAll(() => stub.close());

  it("writes three candidates at once and says how many print the same, on stderr and in the JSON", async () => {
    const result = await runCli(["run", "Print three.", "--candidates", "3", "--json", "--model", "stub-model"], {
      env: { OPENAI_BASE_URL: stub.url },
    });
    expect(result.code).toBe(0);
    expect(stub.requests).toHaveLength(3);
    expect(result.stderr).toMatch(/^✓ passed after 1 attempt /m);
    expect(result.stderr).toContain("candidates: 2 of 3 candidates print the same");
    const summary = JSON.parse(result.stdout);
    expect(summary.candidates).toMatchObject({ size: 3, passed: 3, agreement: "2 of 3 candidates print the same" });
    expect(summary.usage).toMatchObject({ calls: 3, totalTokens: 330 });
  });

  it("names the flag of a bad candidates value", async () => {
    const result = await runCli(["run", "Print three.", "--candidates", "99", "--model", "stub-model"], {
      env: { OPENAI_BASE_URL: stub.url },
    });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("--candidates must be at most 16 (got 99)");
  });
});
