import { afterAll, describe, expect, it } from "vitest";
import {
  assembleProgram,
  createAgent,
  createSandbox,
  type Language,
  parseSettings,
  settleCompletion,
} from "../../src/internal.js";
import { describeFailure } from "../../src/nodes/fixer.prompt.js";
import { boundRuntimeValues, instrumentProgram, takeRuntimeValues } from "../../src/tools/runtime-values/index.js";
import { BACKENDS, backendMissing } from "../helpers/backends.js";
import { failedExecution, fence, promptText, scriptedModel } from "../helpers/helpers.js";

/**
 * The harness behind runtime values, on every backend: what the program sees and prints is what
 * it would without it (line numbers, traceback, its own file, the work dir), the completion mark
 * still proves the tests finished, and the values come back cut and masked.
 */

const TESTS: Record<Language, string> = {
  python: "assert add(2, 3) == 5\n",
  javascript: 'const assert = require("node:assert");\nassert.strictEqual(add(2, 3), 5);\n',
};
const WRONG: Record<Language, string> = {
  python: "def add(a, b):\n    return a - b\n",
  javascript: "function add(a, b) {\n  return a - b;\n}\n",
};
const RIGHT: Record<Language, string> = {
  python: "def add(a, b):\n    return a + b\n",
  javascript: "function add(a, b) {\n  return a + b;\n}\n",
};
/** What a program sees of itself: the work dir's files, its own file's text, its globals. */
const SELF_VIEW: Record<Language, string> = {
  python:
    'import os, sys\nprint(sorted(os.listdir(".")))\nprint(len(open(__file__).read().splitlines()))\nprint(sys.argv, __name__)\nprint(sorted(name for name in globals() if not name.startswith("__")))\n',
  javascript:
    'const fs = require("node:fs");\nconsole.log(fs.readdirSync(".").sort());\nconsole.log(require.main === module, typeof require, process.argv.length);\n',
};

async function runBoth(
  sandbox: ReturnType<typeof createSandbox>,
  code: string,
  tests: string | undefined,
  language: Language,
) {
  const program = assembleProgram(code, tests, language);
  const instrumented = instrumentProgram(program, language, { calls: true });
  if (!instrumented) throw new Error("no harness for this program");
  const plain = settleCompletion(await sandbox.run({ language, code: program.source }), program);
  const raw = await sandbox.run({ language, code: instrumented.code, files: instrumented.files });
  const taken = takeRuntimeValues(raw, instrumented.nonce);
  return { plain, withValues: settleCompletion(taken.result, program), values: taken.values };
}

for (const backend of BACKENDS) {
  const missing = backendMissing(backend.kind);
  describe.skipIf(missing !== null)(
    `the values harness on the ${backend.kind} backend${missing ? `: skipped, ${missing}` : ""}`,
    () => {
      const sandbox = missing === null ? (backend.make() as ReturnType<typeof createSandbox>) : undefined;
      afterAll(() => sandbox?.close?.());

      for (const language of ["python", "javascript"] as const) {
        it(`shows a failed ${language} check's operands, with the traceback and line the plain run gives`, async () => {
          const { plain, withValues, values } = await runBoth(sandbox!, WRONG[language], TESTS[language], language);
          expect(values?.assertion?.parts.slice(0, 2)).toEqual([
            { expr: "add(2, 3)", role: "call", value: "-1" },
            expect.objectContaining({ expr: "5", value: "5" }),
          ]);
          expect(withValues.error?.line).toBe(language === "python" ? 5 : 7);
          expect(withValues.error?.line).toBe(plain.error?.line);
          expect(withValues.error?.type).toBe(plain.error?.type);
          // Python's traceback is the plain one to the character; Node's differs in line 1's column only.
          if (language === "python") expect(withValues.error?.traceback).toBe(plain.error?.traceback);
          expect(withValues.stderr).not.toMatch(/selfheal-values|\.selfheal-|selfheal_harness/);
          expect(withValues.testsCompleted).toBe(false);
        });

        it(`lets a right ${language} program pass, its tests finished and its stderr empty`, async () => {
          const { withValues, values } = await runBoth(sandbox!, RIGHT[language], TESTS[language], language);
          expect(withValues.status).toBe("ok");
          expect(withValues.testsCompleted).toBe(true);
          expect(withValues.stderr).toBe("");
          expect(values).toBeUndefined();
        });

        it(`shows a ${language} program the same work dir, file and globals as the plain run`, async () => {
          const { plain, withValues } = await runBoth(sandbox!, SELF_VIEW[language], undefined, language);
          expect(withValues.status).toBe("ok");
          expect(withValues.stdout).toBe(plain.stdout);
        });
      }

      it("reports a Python syntax error as the plain run does", async () => {
        const { plain, withValues, values } = await runBoth(sandbox!, "def f(:\n    pass\n", TESTS.python, "python");
        expect(withValues.error).toEqual(plain.error);
        expect(withValues.error).toMatchObject({ type: "SyntaxError", line: 1 });
        expect(values).toBeUndefined();
      });
    },
  );
}

describe("values are cut and masked before they reach state", () => {
  const sandbox = createSandbox({ kind: "process" });
  afterAll(() => sandbox.close());

  it("cuts a 50 MB Python local and a million-item list, saying how much", async () => {
    const code =
      'big = "x" * 50_000_000\nitems = list(range(1_000_000))\ndef check(text, numbers):\n    raise ValueError("too big")\ncheck(big, items)\n';
    const { values } = await runBoth(sandbox, code, undefined, "python");
    const locals = Object.fromEntries(values?.frames?.[0]?.locals ?? []);
    expect(values?.frames?.[0]?.function).toBe("check");
    expect(locals.text).toBe(`'${"x".repeat(160)}'[... 49,999,840 characters cut ...]`);
    expect(locals.numbers).toBe("[0, 1, 2, 3, 4, 5, 6, 7, ... 999,992 more]");
    expect(JSON.stringify(values).length).toBeLessThan(2_000);
  });

  it("cuts a 50 MB JavaScript local, saying how much", async () => {
    const code = 'function check(text) {\n  throw new Error("too big");\n}\ncheck("x".repeat(50_000_000));\n';
    const { values } = await runBoth(sandbox, code, undefined, "javascript");
    expect(values?.frames?.[0]).toEqual({
      function: "check",
      line: 2,
      locals: [["text", `'${"x".repeat(160)}'[... 49,999,840 characters cut ...]`]],
    });
  });

  for (const language of ["python", "javascript"] as const) {
    it(`masks a fake API key in a ${language} value and a local with a secret's name`, async () => {
      const code =
        language === "python"
          ? 'def connect(header, api_key, options):\n    raise ConnectionError("refused")\nconnect("Authorization: sk-live-abcdefghijklmnopqrstuvwxyz0123", "plain-looking-value-42", {"token": "t0k3n-value-77", "user": "bob"})\n'
          : 'function connect(header, apiKey, options) {\n  throw new Error("refused");\n}\nconnect("Authorization: sk-live-abcdefghijklmnopqrstuvwxyz0123", "plain-looking-value-42", { token: "t0k3n-value-77", user: "bob" });\n';
      const { values } = await runBoth(sandbox, code, undefined, language);
      const shown = JSON.stringify(values);
      expect(values?.frames?.[0]?.function).toBe("connect");
      for (const secret of ["sk-live-abcdefghijklmnopqrstuvwxyz0123", "plain-looking-value-42", "t0k3n-value-77"]) {
        expect(shown).not.toContain(secret);
      }
      expect(shown).toContain("Authorization: <masked>");
      expect(shown).toContain("bob");
    });
  }

  it("masks the host's own secrets again on the host, whatever the harness let through", () => {
    const raw = { frames: [{ function: "f", line: 1, locals: [["pasted", "'my-host-secret-value-99'"]] }] };
    expect(boundRuntimeValues(raw, ["my-host-secret-value-99"])?.frames?.[0]?.locals).toEqual([
      ["pasted", "'<masked>'"],
    ]);
  });

  it("cuts every text again on the host, so state never holds more than its limits", () => {
    const raw = {
      frames: Array.from({ length: 10 }, (_, index) => ({
        function: `f${index}`,
        line: index,
        locals: Array.from({ length: 50 }, (_, local) => [`v${local}`, "y".repeat(10_000)]),
      })),
    };
    const bounded = boundRuntimeValues(raw, []);
    expect(bounded?.frames).toHaveLength(3);
    expect(bounded?.frames?.[0]?.locals).toHaveLength(12);
    expect(bounded?.frames?.[0]?.locals[0]?.[1]).toBe(`${"y".repeat(300)}[... 9,700 characters cut ...]`);
    expect(bounded?.cut).toBe(36 * 9_700);
  });

  it("keeps a failed run's checkpointed values small and tells the fixer what was cut", async () => {
    const prompts: string[] = [];
    const model = scriptedModel(
      fence('def grow():\n    big = "z" * 50_000_000\n    return len(big) // 0\n'),
      (messages) => {
        prompts.push(promptText(messages));
        return fence("def grow():\n    return 1\n");
      },
    );
    const result = await createAgent({ model, sandbox }).invoke(
      { task: "Write grow().", tests: "assert grow() == 1\n" },
      { context: parseSettings({ maxAttempts: 2 }) },
    );
    expect(result.status).toBe("passed");
    expect(prompts[0]).toContain(`- in grow, line 3: big = '${"z".repeat(160)}'[... 49,999,840 characters cut ...]`);
    expect(prompts[0]).toContain("[... 49,999,840 characters of these values cut ...]");
  });
});

describe("the fixer is told what it cannot see", () => {
  const run = failedExecution;

  it("says how many characters of a long traceback and of the output were cut", () => {
    const traceback = `${"t".repeat(12_345)}${"T".repeat(2_000)}`;
    const text = describeFailure(
      run({ error: { type: "ValueError", message: "x", line: 1, traceback }, stdout: "o".repeat(10_800) }),
    );
    expect(text).toContain(`Traceback:\n[... 12,345 characters cut ...]\n${"T".repeat(2_000)}`);
    expect(text).toContain(`stdout (tail):\n[... 10,000 characters cut ...]\n${"o".repeat(800)}`);
  });

  it("says when the output limit dropped output", () => {
    expect(describeFailure(run({ status: "output_limit", truncated: true, stdout: "a\n" }))).toContain(
      "The program printed more than the output limit: what it printed past the limit was not kept.",
    );
  });

  it("caps the values section and says how much of it was cut", () => {
    const locals = Array.from({ length: 12 }, (_, index): [string, string] => [`v${index}`, "w".repeat(300)]);
    const text = describeFailure(
      run({ values: { frames: [1, 2, 3].map((line) => ({ function: "f", line, locals })) } }),
    );
    const section = text.slice(text.indexOf("Values at the failure"));
    // Each line: "- in f, line N: " (16) + 10 x "vK = " + 300 + 2 x "vKK = " + 300 + 11 x ", " = 3,700;
    // 3 lines and 2 newlines make 11,102 characters, of which 1,600 are shown.
    expect(section).toContain("[... 9,502 characters cut ...]");
  });
});
