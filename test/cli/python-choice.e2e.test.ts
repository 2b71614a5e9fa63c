import { execFileSync } from "node:child_process";
import { realpathSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli-helpers.js";
import { fence } from "../helpers/helpers.js";
import { type OpenAIStub, startOpenAIStub } from "../helpers/openai-stub.js";
import { scratchDir } from "../helpers/scratch.js";

// A new user's python3 often lacks pandas and matplotlib (pyenv, a bare venv) while another Python
// on the machine has them (Debian's /usr/bin/python3, which .ci/run gives both). A bare venv of
// Debian's Python, first on PATH, is such a python3 here and in CI alike.
const SYSTEM_PYTHON = "/usr/bin/python3";
let bare: string;
let pathWithBareFirst: string;

beforeAll(() => {
  const venv = join(scratchDir("bare-venv"), "venv");
  execFileSync(SYSTEM_PYTHON, ["-m", "venv", "--without-pip", venv]);
  bare = join(venv, "bin", "python3");
  pathWithBareFirst = `${join(venv, "bin")}:${process.env.PATH ?? ""}`;
  // The premise: the venv's python3 cannot import pandas; Debian's can.
  expect(() => execFileSync(bare, ["-c", "import pandas"], { stdio: "ignore" })).toThrow();
  execFileSync(SYSTEM_PYTHON, ["-c", "import pandas, matplotlib"], { stdio: "ignore" });
});

describe("which Python runs programs", () => {
  it("picks a Python that has pandas and matplotlib for the data demo when python3 on PATH lacks them, and says so", async () => {
    const result = await runCli(["demo", "--data", "--sandbox", "bwrap", "--json"], {
      env: { PATH: pathWithBareFirst },
    });
    expect(result.stderr).toMatch(
      new RegExp(
        `^python (\\S+) \\([\\d.]+\\): it has pandas, matplotlib, which the task's files suggest; python3 on PATH \\(${bare}\\) lacks pandas, matplotlib \\(choose with --python or \\$SELFHEAL_PYTHON\\)$`,
        "m",
      ),
    );
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ status: "passed", attempt: 2 });
  }, 180_000);

  it("keeps a Python the user named, warns that it lacks what the task suggests, and hints what to do when an import fails", async () => {
    const result = await runCli(["demo", "--data", "--sandbox", "process", "--json"], {
      env: { SELFHEAL_PYTHON: bare },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `${bare} lacks pandas, matplotlib, which the task's files suggest: install pandas and matplotlib for it, choose another interpreter with --python or $SELFHEAL_PYTHON (\`selfheal doctor\` lists them), or let the run install them with --allow-package pandas matplotlib`,
    );
    expect(result.stderr).toContain(
      "hint: matplotlib is not installed for the Python that runs programs: install matplotlib for it, choose another interpreter with --python or $SELFHEAL_PYTHON (`selfheal doctor` lists them), or let the run install it with --allow-package matplotlib",
    );
    // Once per module, not once per attempt.
    expect(result.stderr.split("hint: matplotlib").length).toBe(2);

    // The flags the hints name are the demo's own: taken as given, the hint's advice makes it pass.
    const help = await runCli(["demo", "--help"]);
    expect(help.stdout).toContain("--python <path>");
    expect(help.stdout).toContain("--allow-package <spec...>");
    const advised = await runCli(["demo", "--data", "--python", SYSTEM_PYTHON, "--sandbox", "process", "--json"], {
      env: { SELFHEAL_PYTHON: bare },
    });
    expect(advised.stderr).toContain(`python ${realpathSync(SYSTEM_PYTHON)} (`);
    expect(advised.code).toBe(0);
    expect(JSON.parse(advised.stdout)).toMatchObject({ status: "passed" });
  }, 240_000);

  describe("--python", () => {
    let stub: OpenAIStub;
    beforeAll(async () => {
      stub = await startOpenAIStub(() => ({ content: fence("import sys, pandas\nprint('ran by', sys.executable)") }));
    });
    afterAll(() => stub.close());

    for (const sandbox of ["bwrap", "process"]) {
      it(`runs the programs with the Python it names, in the ${sandbox} sandbox, over python3 on PATH`, async () => {
        const result = await runCli(
          ["run", "Print which Python runs you.", "--python", SYSTEM_PYTHON, "--sandbox", sandbox, "--json"],
          { env: { OPENAI_BASE_URL: stub.url, PATH: pathWithBareFirst } },
        );
        expect(result.stderr).toContain(`python ${realpathSync(SYSTEM_PYTHON)} (`);
        expect(result.code).toBe(0);
        expect(result.stderr).toContain(`│ ran by ${realpathSync(SYSTEM_PYTHON)}`);
      }, 120_000);
    }
  });

  it("lists each Python in doctor with the data modules that import in it, and the model endpoint", async () => {
    const result = await runCli(["doctor", "--sandbox", "process"], {
      env: { PATH: pathWithBareFirst, OPENAI_BASE_URL: "http://127.0.0.1:9/v1" },
    });
    expect(result.code).toBe(0);
    const lines = result.stdout.split("\n");
    expect(lines).toContain(
      `  * ${bare}  ${execFileSync(bare, ["-c", "import sys; print(sys.version.split()[0])"], { encoding: "utf8" }).trim()}  (python3 on PATH)  numpy no  pandas no  matplotlib no`,
    );
    expect(
      lines.some(
        (line) => line.includes(`${realpathSync(SYSTEM_PYTHON)}  `) && line.endsWith("pandas yes  matplotlib yes"),
      ),
    ).toBe(true);
    expect(lines).toContain("model: gpt-4o-mini at http://127.0.0.1:9/v1");
  }, 120_000);
});
