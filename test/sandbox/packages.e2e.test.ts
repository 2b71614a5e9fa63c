import { spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createAgent, createSandbox, type SettingsInput } from "../../src/index.js";
import { REPO } from "../helpers/cli-helpers.js";
import { fence, promptText, scriptedModel } from "../helpers/helpers.js";
import { scratchDir } from "../helpers/scratch.js";
import { buildWheel } from "../helpers/wheels.js";

const wheels = scratchDir("wheels");
buildWheel(wheels, "sh_greet", "def greet(who):\n    return f'hello, {who}'\n");

/** A server that accepts connections and never answers: an index that hangs. */
async function hangingServer(): Promise<{ url: string; server: Server }> {
  const server = createServer(() => undefined);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const sandboxes = { process: createSandbox({ kind: "process" }), bwrap: createSandbox({ kind: "bwrap" }) };
afterAll(async () => {
  await Promise.all(Object.values(sandboxes).map((sandbox) => sandbox.close()));
});

const greetProgram = fence("from sh_greet import greet\nprint(greet('wheel'))");

function pythonSettings(cacheDir: string, extra: Partial<SettingsInput> = {}): SettingsInput {
  return {
    packages: { python: ["sh-greet"] },
    packageInstall: { cacheDir, pythonFindLinks: wheels },
    ...extra,
  };
}

/** The cache entries (not the staging dirs or npm's own cache) in a cache dir. */
function entries(cacheDir: string): string[] {
  return existsSync(cacheDir) ? readdirSync(cacheDir).filter((name) => !name.startsWith(".")) : [];
}

describe.each(Object.keys(sandboxes) as Array<keyof typeof sandboxes>)("allowed packages on %s", (kind) => {
  const sandbox = sandboxes[kind];

  it("installs an allowed wheel the program imports and reruns it, in the same attempt", async () => {
    const cacheDir = join(scratchDir("cache"), "packages");
    const model = scriptedModel(greetProgram);
    const result = await createAgent({ model, sandbox }).invoke(
      { task: "Greet the wheel." },
      { context: pythonSettings(cacheDir) },
    );
    expect(result.status).toBe("passed");
    expect(result.attempt).toBe(1);
    expect(model.callCount).toBe(1);
    expect(result.lastRun?.stdout).toBe("hello, wheel\n");
    expect(result.history).toEqual([
      expect.objectContaining({ attempt: 1, outcome: "passed", installed: ["sh-greet"] }),
    ]);
    expect(result.notes).toEqual([
      expect.objectContaining({
        source: "executor",
        attempt: 1,
        message: expect.stringMatching(/not a model attempt/),
      }),
    ]);
    // The installer ran in bwrap with the host's network (bwrap works here and in CI), not on the bare host.
    expect(result.notes[0]?.data).toMatchObject({ ok: true, place: "bwrap" });
    expect(entries(cacheDir)).toHaveLength(1);
  });

  it("reuses the cache in a second run: no install, and the package is there from the first execution", async () => {
    const cacheDir = join(scratchDir("cache"), "packages");
    await createAgent({ model: scriptedModel(greetProgram), sandbox }).invoke(
      { task: "Greet." },
      { context: pythonSettings(cacheDir) },
    );
    const second = await createAgent({ model: scriptedModel(greetProgram), sandbox }).invoke(
      { task: "Greet." },
      // A find-links folder that is gone: an install would fail, so a pass proves none happened.
      { context: { ...pythonSettings(cacheDir), packageInstall: { cacheDir, pythonFindLinks: join(wheels, "gone") } } },
    );
    expect(second.status).toBe("passed");
    expect(second.notes).toEqual([]);
    expect(second.history[0]?.installed).toBeUndefined();
    expect(entries(cacheDir)).toHaveLength(1);
  });
});

describe("packages that cannot be had", () => {
  const sandbox = sandboxes.bwrap;

  it("tells the fixer a package that is not allowed is not available, and the standard-library rewrite passes", async () => {
    const cacheDir = join(scratchDir("cache"), "packages");
    const model = scriptedModel(greetProgram, (messages) => {
      const prompt = promptText(messages);
      expect(prompt).toContain("PackageNotAvailable: 'sh_greet' is not available here: no package may be installed");
      expect(prompt).toContain("using Python's standard library only");
      return fence("print('hello, ' + 'wheel')");
    });
    const result = await createAgent({ model, sandbox }).invoke(
      { task: "Greet the wheel." },
      { context: { packageInstall: { cacheDir, pythonFindLinks: wheels } } },
    );
    expect(result.status).toBe("passed");
    expect(result.attempt).toBe(2);
    expect(result.history[0]).toMatchObject({ outcome: "PackageNotAvailable" });
    expect(entries(cacheDir)).toEqual([]);
  });

  it("reports an install that fails as a finding, keeps the run going and does not try again", async () => {
    const cacheDir = join(scratchDir("cache"), "packages");
    const program = fence("import sh_missing\nprint(sh_missing)");
    const model = scriptedModel(program, program, (messages) => {
      expect(promptText(messages)).toContain("could not install sh-missing earlier in this run");
      return fence("print('fine')");
    });
    const result = await createAgent({ model, sandbox }).invoke(
      { task: "Use sh_missing." },
      { context: { ...pythonSettings(cacheDir), packages: { python: ["sh-missing"] }, repeatLimit: 3 } },
    );
    expect(result.status).toBe("passed");
    expect(result.history.map((entry) => entry.outcome)).toEqual([
      "PackageInstallFailed",
      "PackageInstallFailed",
      "passed",
    ]);
    expect(result.errors[0]?.message).toMatch(/^could not install sh-missing: .*exited with 1: .*sh-missing/);
    // One install tried, at attempt 1; attempt 2 read its failure from the notes.
    expect(result.notes.map((note) => note.attempt)).toEqual([1]);
    expect(entries(cacheDir)).toEqual([]);
  });

  it("kills an install that outlives packageInstall.timeoutMs and says so", async () => {
    const cacheDir = join(scratchDir("cache"), "packages");
    const { url, server } = await hangingServer();
    try {
      const model = scriptedModel(greetProgram, fence("print('hello, wheel')"));
      const result = await createAgent({ model, sandbox }).invoke(
        { task: "Greet the wheel." },
        {
          context: {
            packages: { python: ["sh-greet"] },
            packageInstall: { cacheDir, pythonIndexUrl: `${url}/simple`, timeoutMs: 1500 },
          },
        },
      );
      expect(result.status).toBe("passed");
      expect(result.errors[0]).toMatchObject({
        type: "PackageInstallFailed",
        message: expect.stringMatching(/^could not install sh-greet: the install timed out after 1500 ms/),
      });
      expect(readdirSync(cacheDir)).toEqual([]);
    } finally {
      server.close();
    }
  });
});

describe("npm packages from the registry", () => {
  it.each([
    {
      how: "require() fails with Cannot find module",
      code: "const isOdd = require('is-odd');\nconsole.log(isOdd(3), isOdd(4));",
      spec: "is-odd@3.0.1",
      printed: "true false\n",
    },
    {
      how: "import() fails with ERR_MODULE_NOT_FOUND",
      code: "import('is-odd').then((module) => console.log(module.default(7)));",
      spec: "is-odd",
      printed: "true\n",
    },
  ])(
    "installs an allowed package when $how, and reruns the program in the same attempt",
    async ({ code, spec, printed }) => {
      const cacheDir = join(scratchDir("cache"), "packages");
      const result = await createAgent({
        model: scriptedModel(fence(code, "javascript")),
        sandbox: sandboxes.bwrap,
      }).invoke(
        { task: "Which numbers are odd?", language: "javascript" },
        { context: { packages: { javascript: [spec] }, packageInstall: { cacheDir } } },
      );
      expect(result.status).toBe("passed");
      expect(result.attempt).toBe(1);
      expect(result.lastRun?.stdout).toBe(printed);
      expect(result.history[0]?.installed).toEqual([spec]);
      expect(entries(cacheDir)).toHaveLength(1);
    },
  );
});

describe("one cache shared by processes", () => {
  it("keeps one whole entry when two processes install the same packages at the same moment", async () => {
    const cacheDir = join(scratchDir("cache"), "packages");
    const script = `
      import { findPackageEntry, installPackages } from "./src/sandbox/packages/installer.ts";
      import { parseSettings } from "./src/index.ts";
      const install = parseSettings({ packageInstall: { cacheDir: process.argv[1], pythonFindLinks: process.argv[2] } }).packageInstall;
      const request = { language: "python", specs: ["sh-greet"], install };
      const outcome = await installPackages(request, await findPackageEntry(request));
      console.log(JSON.stringify({ ok: outcome.ok, dir: outcome.ok ? outcome.entry.dir : outcome.reason }));
    `;
    const installOnce = () =>
      new Promise<string>((resolve, reject) => {
        const child = spawn(
          process.execPath,
          ["--import", "tsx", "--input-type=module", "-e", script, cacheDir, wheels],
          {
            cwd: REPO,
            stdio: ["ignore", "pipe", "inherit"],
          },
        );
        let output = "";
        child.stdout.on("data", (chunk: Buffer) => {
          output += chunk.toString();
        });
        child.on("error", reject);
        child.on("close", () => resolve(output.trim()));
      });
    const [first, second] = await Promise.all([installOnce(), installOnce()]);
    expect(first).toBe(second);
    const { ok, dir } = JSON.parse(first) as { ok: boolean; dir: string };
    expect(ok).toBe(true);
    expect(readdirSync(cacheDir)).toEqual([dir.split("/").at(-1)]);
    expect(readdirSync(dir).sort()).toEqual(["selfheal-packages.json", "sh_greet", "sh_greet-1.0.dist-info"]);
  });
});
