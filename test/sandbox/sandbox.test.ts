import { spawn, spawnSync } from "node:child_process";
import { createHash, randomInt } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PYTHON_BOOTSTRAP } from "../../src/sandbox/host/bootstrap.js";
import { InterpreterMissingError, resolveInterpreters } from "../../src/sandbox/host/interpreters.js";
import { WorkDir } from "../../src/sandbox/host/work-dir.js";
import { createSandbox, DEFAULT_LIMITS, type ManagedSandbox, probeBwrap } from "../../src/sandbox/index.js";
import { resolveLimits } from "../../src/sandbox/limits.js";
import { ProcessLauncher } from "../../src/sandbox/process/backend.js";
import { type Launcher, LocalSandbox } from "../../src/sandbox/run/local-sandbox.js";
import type { OutputStream, RunRequest } from "../../src/sandbox/types.js";
import { prepareProgram } from "../../src/tools/judge/prepare.js";
import { bwrapMissing } from "../helpers/capabilities.js";
import { REPO } from "../helpers/cli-helpers.js";
import { pidsWithMarker } from "../helpers/owner-harness.js";

// Without bubblewrap the bwrap half is left out, saying so (it fails under SELFHEAL_TEST_REQUIRE_BWRAP=1).
const noBwrap = bwrapMissing();
const bwrapUsable = noBwrap === null;
const LOCAL_KINDS: ("process" | "bwrap")[] = bwrapUsable ? ["process", "bwrap"] : ["process"];

describe("createSandbox", () => {
  it("exports the documented default limits", () => {
    expect(DEFAULT_LIMITS).toEqual({
      timeoutMs: 10_000,
      memoryMb: 512,
      cpuSeconds: 10,
      maxProcesses: 64,
      maxFileMb: 16,
      maxDiskMb: 64,
      maxOutputBytes: 65_536,
      maxConnections: 64,
      maxNetworkMb: 64,
    });
  });

  it("picks bwrap for auto when bubblewrap works here, else the process backend", () => {
    expect(createSandbox({ prewarm: false }).kind).toBe(bwrapUsable ? "bwrap" : "process");
  });

  it("warns a program once that the process backend is not isolation (the test run itself hides it)", () => {
    const script = `import { createSandbox } from "./src/sandbox/index.ts";\nfor (let i = 0; i < 2; i++) await createSandbox({ kind: "process", prewarm: false }).close();`;
    const result = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: REPO,
      encoding: "utf8",
    });
    expect(result.status).toBe(0);
    expect(result.stderr.match(/SelfhealSandboxWarning: .*NOT isolation/g)).toHaveLength(1);
  });

  it("rejects a limit that would switch the limit off", () => {
    expect(() => createSandbox({ kind: "process", limits: { timeoutMs: 0 } })).toThrow(/timeoutMs/);
  });

  it("reports a run as unavailable when the interpreter is missing", async () => {
    const noPython: Launcher = {
      kind: "process",
      egress: { via: "tcp", enforced: false, supportDir: "/nowhere" },
      describe: () => new ProcessLauncher(resolveLimits()).describe(),
      async reserve() {
        const workDir = await WorkDir.create();
        return {
          workDir,
          spawn: (language) => {
            throw new InterpreterMissingError(language);
          },
          release: () => workDir.remove(),
        };
      },
    };
    const sandbox = new LocalSandbox(noPython, resolveLimits(), "off");
    const result = await sandbox.run({ language: "python", code: "print(1)" });
    expect(result.status).toBe("unavailable");
    expect(result.stderr).toContain("python3 was not found");
    await sandbox.close();
  });

  it("names the package to install when bubblewrap is missing", () => {
    const probe = probeBwrap({ path: "/nonexistent" });
    expect(probe.usable).toBe(false);
    expect(probe.usable ? "" : probe.reason).toContain("apt-get install bubblewrap");
  });
});

describe.each(LOCAL_KINDS)("the %s backend", (kind) => {
  let sandbox: ManagedSandbox;
  const run = (request: RunRequest) => sandbox.run(request);

  beforeAll(() => {
    sandbox = createSandbox({ kind, limits: { memoryMb: 256 } });
  });

  afterAll(async () => {
    await sandbox.close();
  });

  it("reports the backend it is", () => {
    expect(sandbox.kind).toBe(kind);
  });

  it("streams each line while the program is still running", async () => {
    // The program starts a long sleep with a marker of its own before it prints and waits for it
    // after. The sleep ends only when both early lines reach us and we kill it, so however slow
    // this machine is, a line seen while the sleep is on the host came before the run ended.
    const marker = `300.${randomInt(1_000_000, 9_999_999)}`;
    const seen: { stream: OutputStream; line: string; running: boolean }[] = [];
    const code = [
      "import subprocess, sys",
      `sleeper = subprocess.Popen(["sleep", "${marker}"])`,
      // Popen returns once exec began, a moment before the kernel shows the new command line:
      // the line goes out only once the sleep can be seen by its marker.
      `while b"${marker}" not in open(f"/proc/{sleeper.pid}/cmdline", "rb").read():`,
      "    pass",
      "print('first', flush=True)",
      "print('oops', file=sys.stderr, flush=True)",
      "sleeper.wait()",
      "print('last')",
    ].join("\n");
    const onOutput = (stream: OutputStream, line: string) => {
      const sleepers = pidsWithMarker(marker);
      seen.push({ stream, line, running: sleepers.length > 0 });
      if (seen.length === 2) for (const pid of sleepers) process.kill(pid, "SIGKILL");
    };
    const result = await sandbox.run({ language: "python", code, timeoutMs: 120_000 }, { onOutput });
    expect(result.status).toBe("ok");
    expect(seen.map(({ stream, line }) => `${stream}:${line}`)).toEqual(["stdout:first", "stderr:oops", "stdout:last"]);
    expect(seen[0]?.running).toBe(true);
  });

  it("gives the program only PATH, HOME and locale variables", async () => {
    const result = await run({ language: "python", code: "import os\nprint(sorted(os.environ))\n" });
    const names: string[] = JSON.parse(result.stdout.replace(/'/g, '"'));
    for (const name of names) expect(name).toMatch(/^(PATH|HOME|PWD|TMPDIR|TMP|TEMP|LANG|LANGUAGE|LC_\w+)$/);
    expect(names).toContain("HOME");
  });

  it("sets HOME to the work dir", async () => {
    const result = await run({ language: "python", code: "import os\nprint(os.environ['HOME'] == os.getcwd())\n" });
    expect(result.stdout).toBe("True\n");
  });

  it("reports CPU time used up as a timeout", async () => {
    const limited = createSandbox({ kind, limits: { cpuSeconds: 1 }, prewarm: false });
    try {
      const result = await limited.run({ language: "python", code: "while True:\n    pass\n", timeoutMs: 8_000 });
      // SIGXCPU: the CPU limit ended it, not the wall clock.
      expect(result.status).toBe("timeout");
      expect(result.signal).toBe("SIGXCPU");
    } finally {
      await limited.close();
    }
  });
});

describe.skipIf(!bwrapUsable)(`the bwrap file system${noBwrap ? ` (skipped: ${noBwrap})` : ""}`, () => {
  it("is writable only in /work, /tmp and /dev/shm", async () => {
    const sandbox = createSandbox({ kind: "bwrap", prewarm: false });
    const targets = ["/work/a", "/tmp/a", "/dev/shm/a", "/a", "/etc/a", "/usr/a", "/dev/a", "/.selfheal/a"];
    const code = [
      "import json",
      "writable = []",
      `for target in ${JSON.stringify(targets)}:`,
      "    try:",
      "        open(target, 'w').write('x')",
      "        writable.append(target)",
      "    except OSError:",
      "        pass",
      "print(json.dumps(writable))",
    ].join("\n");
    try {
      const result = await sandbox.run({ language: "python", code });
      expect(JSON.parse(result.stdout)).toEqual(["/work/a", "/tmp/a", "/dev/shm/a"]);
    } finally {
      await sandbox.close();
    }
  });
});

describe.each(LOCAL_KINDS)("pre-warmed runs on the %s backend", (kind) => {
  let warm: ManagedSandbox;
  let cold: ManagedSandbox;

  beforeAll(async () => {
    warm = createSandbox({ kind });
    cold = createSandbox({ kind, prewarm: false });
    await warm.prewarm();
  });

  afterAll(async () => {
    await Promise.all([warm.close(), cold.close()]);
  });

  const failingPython = "def load(path):\n    return open(path).read()\n\nprint('start')\nload('missing.txt')\n";
  const failingJavaScript =
    "function parse(text) {\n  return JSON.parse(text);\n}\nconsole.log('start');\nparse('{');\n";

  it("gives the same Python traceback as a cold run", async () => {
    const [warmResult, coldResult] = [
      await warm.run({ language: "python", code: failingPython }),
      await cold.run({ language: "python", code: failingPython }),
    ];
    expect(warmResult.error).toEqual(coldResult.error);
    expect(warmResult.error).toMatchObject({ type: "FileNotFoundError", line: 2 });
    expect(warmResult.stdout).toBe("start\n");
    expect(warmResult.exitCode).toBe(1);
  });

  it("gives the same Python SyntaxError as a cold run", async () => {
    const code = "values = [1, 2\nprint(values)\n";
    await warm.prewarm(["python"]);
    const [warmResult, coldResult] = [
      await warm.run({ language: "python", code }),
      await cold.run({ language: "python", code }),
    ];
    expect(warmResult.error).toEqual(coldResult.error);
    expect(warmResult.error).toMatchObject({ type: "SyntaxError", line: 1 });
  });

  it("names main.js with the right line in a JavaScript stack", async () => {
    await warm.prewarm(["javascript"]);
    const [warmResult, coldResult] = [
      await warm.run({ language: "javascript", code: failingJavaScript }),
      await cold.run({ language: "javascript", code: failingJavaScript }),
    ];
    expect(warmResult.error).toMatchObject({
      type: coldResult.error?.type,
      message: coldResult.error?.message,
      line: 2,
    });
    expect(warmResult.error?.traceback).toContain("main.js:2");
  });

  it("keeps exit codes, atexit handlers and stdin as a cold run does", async () => {
    await warm.prewarm(["python"]);
    const code =
      "import atexit, sys\natexit.register(lambda: print('bye'))\nprint(sys.stdin.read(), sys.argv, __name__)\nsys.exit(4)\n";
    const result = await warm.run({ language: "python", code, stdin: "in" });
    expect(result).toMatchObject({ status: "error", exitCode: 4, stdout: "in ['main.py'] __main__\nbye\n" });
  });

  it("takes a program longer than a pipe holds with the go, and puts it on disk byte for byte before it runs", async () => {
    await warm.prewarm(["python"]);
    // Over 64 KiB (a pipe's buffer) of two-, three- and four-byte UTF-8, and a stray main.py in
    // `files` and in `inputs`, which the code must replace as it does on a cold run.
    const filler = `# ${"é€😀".repeat(8000)}\n`;
    const code = `${filler}import hashlib\nsource = open(__file__, "rb").read()\nprint(hashlib.sha256(source).hexdigest(), len(source))\n`;
    const bytes = Buffer.from(code);
    expect(bytes.length).toBeGreaterThan(65_536);
    const result = await warm.run({
      language: "python",
      code,
      files: { "main.py": "print('stray')\n" },
      inputs: [{ name: "./main.py", content: Buffer.from("print('stray input')\n") }],
    });
    expect(result.stdout).toBe(`${createHash("sha256").update(bytes).digest("hex")} ${bytes.length}\n`);
    expect(result.status).toBe("ok");
  });

  it("keeps nothing from one run to the next", async () => {
    await warm.prewarm(["python"]);
    await warm.run({
      language: "python",
      code: "import sys\nsys.modules['json'].leak = 1\nopen('state.txt', 'w').write('x')\n",
    });
    await warm.prewarm(["python"]);
    const result = await warm.run({
      language: "python",
      code: "import json, os\nprint(hasattr(json, 'leak'), os.path.exists('state.txt'))\n",
    });
    expect(result.stdout).toBe("False False\n");
  });

  it("removes the work dirs of warm interpreters on close", async () => {
    const sandbox = createSandbox({ kind });
    await sandbox.prewarm(["python"]);
    const result = await sandbox.run({ language: "python", code: "import os\nprint(os.getcwd())\n" });
    await sandbox.prewarm(["python"]);
    await sandbox.close();
    if (kind === "process") expect(existsSync(result.stdout.trim())).toBe(false);
    const after = await sandbox.run({ language: "python", code: "print('still usable')" });
    expect(after.stdout).toBe("still usable\n");
  });
});

describe("the Python bootstrap, against a plain `python3 -I -u main.py`", () => {
  let sandbox: ManagedSandbox;
  let warm: ManagedSandbox;
  let python: string;
  let directory: string;

  beforeAll(async () => {
    // A judged run prepared first, as the agent does: warm interpreters from then on hold the judge.
    prepareProgram("x = 1\n", "assert x == 1\n", "python");
    sandbox = createSandbox({ kind: "process", prewarm: false });
    warm = createSandbox({ kind: "process" });
    const interpreter = (await resolveInterpreters()).python;
    if (!interpreter) throw new Error("python3 is needed for these tests");
    python = interpreter.executable;
    directory = mkdtempSync(join(tmpdir(), "selfheal-bootstrap-test-"));
  });

  afterAll(async () => {
    await Promise.all([sandbox.close(), warm.close()]);
    rmSync(directory, { recursive: true, force: true });
  });

  /** What the real interpreter prints for this program, run the way the brief describes. */
  function runDirectly(code: string) {
    writeFileSync(join(directory, "main.py"), code);
    const direct = spawnSync(python, ["-I", "-u", "main.py"], { cwd: directory, encoding: "utf8", input: "" });
    return { stdout: direct.stdout, stderr: normalise(direct.stderr), exitCode: direct.status };
  }

  /** Work dirs and object addresses differ from run to run; nothing else may. */
  function normalise(stderr: string): string {
    return stderr.replace(/"\/[^"]*\/main\.py"/g, '"main.py"').replace(/0x[0-9a-f]+/g, "0x…");
  }

  const programs: Record<string, string> = {
    "a runtime error in a function": "def half(x):\n    return x / 0\n\nprint('before')\nhalf(4)\n",
    "a syntax error": "print('never')\nif True\n    pass\n",
    "a chained exception": "try:\n    int('x')\nexcept ValueError as error:\n    raise KeyError('k') from error\n",
    "sys.exit with a message": "import sys\nsys.exit('giving up')\n",
    "sys.exit with a code": "import sys\nprint('partial')\nsys.exit(3)\n",
    "atexit handlers and a late thread": [
      "import atexit, threading, time",
      "atexit.register(lambda: print('atexit ran'))",
      "def late():",
      "    time.sleep(0.2)",
      "    print('thread finished')",
      "threading.Thread(target=late).start()",
      "print('main done')",
    ].join("\n"),
    "an exception raised in an atexit handler": "import atexit\natexit.register(lambda: 1 / 0)\nprint('ok')\n",
    // A warm interpreter imports the judge's modules ahead; a run that is not judged must not find them.
    "the modules loaded before the first line":
      "import sys\nprint(sorted(name for name in ('json', 'linecache', 'traceback', 'signal', 'operator', '_ctypes', '_ast') if name in sys.modules))\n",
  };

  it("runs nothing when the pipe closes partway through a program sent with the go", async () => {
    const workDir = join(directory, "cut-off");
    mkdirSync(workDir);
    const child = spawn(python, ["-I", "-u", "-c", PYTHON_BOOTSTRAP], {
      cwd: workDir,
      stdio: ["ignore", "pipe", "pipe", "pipe"],
    });
    const control = child.stdio[3] as Socket;
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (chunk) => (stdout += chunk));
    child.stderr?.on("data", (chunk) => (stderr += chunk));
    await new Promise((resolve) => control.once("data", resolve));
    // Announced as 100 bytes; 14 come, then the pipe closes.
    const program = "print('ran')\n";
    control.end(`g${"0123456789abcdef".repeat(2)}p${"100".padStart(10, "0")}${program}`);
    const exitCode = await new Promise((resolve) => child.once("exit", resolve));
    expect({ exitCode, stdout, stderr }).toEqual({
      exitCode: 1,
      stdout: "",
      stderr: "selfheal: the program did not arrive whole\n",
    });
    expect(readFileSync(join(workDir, "main.py"), "utf8")).toBe("");
  });

  for (const [name, code] of Object.entries(programs)) {
    it(`matches it on ${name}, cold and pre-warmed (the program sent with the go)`, async () => {
      const expected = runDirectly(code);
      const result = await sandbox.run({ language: "python", code });
      expect({ stdout: result.stdout, stderr: normalise(result.stderr), exitCode: result.exitCode }).toEqual(expected);
      await warm.prewarm(["python"]);
      const warmResult = await warm.run({ language: "python", code });
      expect({
        stdout: warmResult.stdout,
        stderr: normalise(warmResult.stderr),
        exitCode: warmResult.exitCode,
      }).toEqual(expected);
    });
  }
});
