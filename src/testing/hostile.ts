// Over 400 lines: one suite whose cases are a flat list under one describe(), sharing one sandbox,
// its markers and its clean-ups; each case is a few lines (the programs are in hostile-programs.ts),
// and splitting them would scatter the list the README's table of guarantees is.
import { randomBytes, randomInt } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";

import { inheritableFds } from "../sandbox/host/bootstrap.js";
import { resolveLimits } from "../sandbox/limits.js";
import type { Language, RunRequest, RunResult, Sandbox, SandboxIsolation, SandboxLimits } from "../sandbox/types.js";
import {
  type Expectation,
  expectConnection,
  expectGone,
  expectWritten,
  FAKE_API_KEY,
  SHARED_PLACES,
  waitUntilGone,
  withFakeApiKey,
  withListener,
} from "./hostile-fixtures.js";
import {
  connectProgram,
  cpuSpreadProgram,
  DISK_FILL_CEILING_MIB,
  diskFillProgram,
  doubleForkProgram,
  FORK_BOMB_CEILING,
  forkBombProgram,
  INODE_FILL_CEILING,
  INODE_FILL_PROGRAM,
  memoryBombProgram,
  memorySpreadProgram,
  SYSCALL_PROBE,
  setsidProgram,
  writeTargetsProgram,
} from "./hostile-programs.js";
import { pidsWithMarker } from "./processes.js";
import type { TestRunner } from "./runner.js";

/**
 * One case per thing generated code may do to the machine running it. Owner death is the
 * conformance suite's (its `owner` option); the rest are here.
 */
export type HostileCase =
  | "infinite loop"
  | "sleep forever"
  | "memory bomb"
  | "fork bomb"
  | "output flood"
  | "write outside the work dir"
  | "read the host's home"
  | "read /etc/shadow"
  | "read a secret file"
  | "API key in the environment"
  | "connect to a host listener"
  | "setsid grandchild"
  | "double-forked daemon"
  | "SIGTERM ignored"
  | "stdout and stderr closed, then sleep"
  | "invalid UTF-8 output"
  | "read stdin"
  | "deep recursion"
  | "JS infinite loop"
  | "JS write outside the work dir"
  | "JS API key in the environment"
  | "JS connect to a host listener"
  | "connect to a host listener beside allowHosts"
  | "memory spread over forked processes"
  | "CPU spread over forked processes"
  | "disk fill in many small files"
  | "inode fill in /tmp"
  | "denied system calls"
  | "descriptors beyond stdio"
  | "TMPDIR kept for the next run"
  | "shared temporary places";

/**
 * The cases a backend may list as not contained: each has a proof of its escape. The wall clock,
 * the output cap, the environment (no API key reaches the program) and stdin are never listable:
 * the conformance suite requires them of every backend.
 */
export type EscapingCase = Extract<
  HostileCase,
  | "memory bomb"
  | "fork bomb"
  | "memory spread over forked processes"
  | "CPU spread over forked processes"
  | "disk fill in many small files"
  | "inode fill in /tmp"
  | "denied system calls"
  | "write outside the work dir"
  | "read the host's home"
  | "read /etc/shadow"
  | "read a secret file"
  | "connect to a host listener"
  | "setsid grandchild"
  | "double-forked daemon"
  | "JS write outside the work dir"
  | "JS connect to a host listener"
  | "connect to a host listener beside allowHosts"
  | "descriptors beyond stdio"
  | "TMPDIR kept for the next run"
  | "shared temporary places"
>;

/** Cases a backend cannot contain in one environment, each with the reason. */
export type ExpectedEscapes = Partial<Record<EscapingCase, string>>;

export interface HostileSuiteOptions {
  /** The test functions to register the cases with: `{ describe, it, expect, beforeAll, afterAll, afterEach }` from vitest. */
  runner: TestRunner;
  /**
   * Cases this backend cannot contain in this environment, each with the reason: a literal list in
   * your test file, never read from the sandbox's own describe(). Each listed case asserts its escape
   * (the file written, the secret printed, the process left running), so the suite proves the gap is
   * real instead of hiding it, and a case that no longer escapes fails until it is taken off the list.
   */
  uncontained?: ExpectedEscapes;
  /** The limits `makeSandbox` gives its sandbox (the rest are selfheal's defaults): the cases are drawn from them. */
  limits?: Partial<SandboxLimits>;
  /** The languages the backend runs; both by default. The JS cases need javascript. */
  languages?: readonly Language[];
  /** Vitest's timeout for each case. */
  testTimeoutMs?: number;
  /** Assertions of your own on a contained case's result, such as the sentence your backend prints at a limit. */
  inspect?: Partial<Record<HostileCase, (result: RunResult) => void>>;
}

/** Short wall clock for cases that only end when the sandbox kills them. */
const KILL_AFTER_MS = 1_500;

/** The limit of `describe()` that each whole-run case puts to the test. */
const LIMIT_OF_CASE: Partial<Record<EscapingCase, Exclude<keyof SandboxIsolation, "kind" | "notes" | "start">>> = {
  "fork bomb": "processes",
  "memory spread over forked processes": "memory",
  "CPU spread over forked processes": "cpu",
  "disk fill in many small files": "disk",
  "inode fill in /tmp": "disk",
  "denied system calls": "syscalls",
};

/**
 * The hostile-code suite as a suite of tests, for any backend: register it with a factory for your
 * sandbox and the list of what it cannot contain here. Every hostile program bounds itself (forks,
 * bytes, files, seconds), and whatever a listed escape leaves behind is removed after its case.
 */
export function describeHostileSuite(
  name: string,
  makeSandbox: () => Sandbox | Promise<Sandbox>,
  options: HostileSuiteOptions,
): void {
  const { describe, it, expect, beforeAll, afterAll, afterEach } = options.runner;
  const limits = resolveLimits(options.limits);
  const uncontained = options.uncontained ?? {};
  const javascript = (options.languages ?? ["python", "javascript"]).includes("javascript");

  describe(`hostile code: ${name}`, { timeout: options.testTimeoutMs ?? 180_000 }, () => {
    let sandbox: Sandbox;
    const markers: string[] = [];
    const cleanups: (() => void)[] = [];

    beforeAll(async () => {
      sandbox = await makeSandbox();
    });

    afterAll(async () => {
      await sandbox.close();
    });

    // Cases that are expected to escape must not leave processes or files behind either.
    afterEach(() => {
      for (const marker of markers.splice(0)) {
        for (const pid of pidsWithMarker(marker)) {
          try {
            process.kill(pid, "SIGKILL");
          } catch {
            // gone already
          }
        }
      }
      for (const cleanup of cleanups.splice(0)) cleanup();
    });

    const run = (request: RunRequest): Promise<RunResult> => sandbox.run(request);
    const python = (code: string, timeoutMs?: number, runLimits?: Partial<SandboxLimits>): Promise<RunResult> =>
      run({
        language: "python",
        code,
        ...(timeoutMs ? { timeoutMs } : {}),
        ...(runLimits ? { limits: runLimits } : {}),
      });
    /** A unique sleep duration: it is how we find the program's leftover processes on the host. */
    const newMarker = (): string => {
      const marker = `${randomInt(600, 900)}.${randomInt(1_000_000, 9_999_999)}`;
      markers.push(marker);
      return marker;
    };
    const inspect = (name: HostileCase, result: RunResult): void => options.inspect?.[name]?.(result);

    /** A case a backend may fail to contain: `body` asserts either the containment or the specific escape. */
    const hostileIt = (name: EscapingCase, body: (expected: Expectation) => Promise<void>, runs = true): void => {
      const reason = uncontained[name];
      if (reason) it.runIf(runs)(`${name} escapes, as listed for this environment (${reason})`, () => body("escapes"));
      else it.runIf(runs)(name, () => body("contained"));
    };

    // A detection that wrongly finds no cgroup, tmpfs or filter must fail here (and in the cases it
    // weakens), not turn cases into expected escapes: the list says what this environment contains.
    it("says in describe() that what the list holds contained here is held for the whole run", () => {
      const isolation = sandbox.describe();
      const contained = Object.entries(LIMIT_OF_CASE).filter(([name]) => !(name in uncontained));
      const scopes = Object.fromEntries(contained.map(([name, limit]) => [name, isolation[limit].scope]));
      expect(scopes).toEqual(Object.fromEntries(contained.map(([name]) => [name, "run"])));
    });

    it("infinite loop", async () => {
      expect((await python("while True:\n    pass\n", KILL_AFTER_MS)).status).toBe("timeout");
    });

    it("sleep forever", async () => {
      expect((await python("import time\ntime.sleep(10**6)\n", KILL_AFTER_MS)).status).toBe("timeout");
    });

    hostileIt("memory bomb", async (expected) => {
      const result = await python(memoryBombProgram(limits.memoryMb), 30_000);
      if (expected === "escapes") {
        expect(result).toMatchObject({ status: "ok", stdout: "escaped\n" });
        return;
      }
      expect(result.status).toBe("memory_limit");
      inspect("memory bomb", result);
    });

    hostileIt("fork bomb", async (expected) => {
      const marker = newMarker();
      const result = await python(forkBombProgram(marker), 30_000);
      const forks = Number(result.stdout.trim());
      if (expected === "escapes") {
        // Every fork the program tried went through, far past the cap the sandbox was given.
        expect(forks).toBe(FORK_BOMB_CEILING);
        return;
      }
      expect(forks).toBeGreaterThan(0);
      expect(forks).toBeLessThan(limits.maxProcesses);
      expect(await waitUntilGone(marker)).toEqual([]);
    });

    hostileIt("memory spread over forked processes", async (expected) => {
      // Each child holds a third of the limit, so each one alone passes any per-process limit.
      const share = Math.ceil(limits.memoryMb / 3);
      const result = await python(memorySpreadProgram(share), 30_000);
      if (expected === "escapes") {
        // All four children held their share at once, more than memoryMb together.
        expect(result).toMatchObject({ status: "ok", stdout: `held ${4 * share} MiB\n` });
        return;
      }
      expect(result.status).toBe("memory_limit");
      inspect("memory spread over forked processes", result);
    });

    hostileIt("CPU spread over forked processes", async (expected) => {
      // Three children each burn 3/4 of the CPU budget: within RLIMIT_CPU each, over it together.
      const result = await python(cpuSpreadProgram((limits.cpuSeconds * 0.75).toFixed(2)), 60_000);
      if (expected === "escapes") {
        // 2.25 x cpuSeconds burnt in all, and the run ended by itself.
        expect(result).toMatchObject({ status: "ok", stdout: "burnt them all\n" });
        return;
      }
      // Stopped long before its 60 s wall clock, which the program alone never nears.
      expect(result.status).toBe("timeout");
      expect(result.stdout).not.toContain("burnt them all");
      inspect("CPU spread over forked processes", result);
    });

    /** A fill program's "count failure" line: all `ceiling` made (escaping), or ENOSPC well before it. */
    const expectFillStopped = (result: RunResult, ceiling: number, expected: Expectation): void => {
      const [made, failure] = result.stdout.trim().split(" ");
      if (expected === "escapes") {
        // Every one made: far over any run's bound.
        expect([made, failure]).toEqual([String(ceiling), "none"]);
        return;
      }
      expect(failure).toBe("ENOSPC");
      expect(Number(made)).toBeLessThan(ceiling / 2);
    };

    // Making 20 000 files and removing them costs the program CPU time in the kernel, more on a
    // busy host's /tmp: a CPU limit of a few seconds could stop it first (CI saw it on the process
    // backend, with nothing printed). The CPU budget is not what these cases test.
    const FILL_LIMITS = { cpuSeconds: Math.max(60, limits.cpuSeconds) };

    hostileIt("disk fill in many small files", async (expected) => {
      const result = await python(diskFillProgram("", DISK_FILL_CEILING_MIB), 120_000, FILL_LIMITS);
      expectFillStopped(result, DISK_FILL_CEILING_MIB, expected);
    });

    hostileIt("inode fill in /tmp", async (expected) => {
      expectFillStopped(await python(INODE_FILL_PROGRAM, 120_000, FILL_LIMITS), INODE_FILL_CEILING, expected);
    });

    hostileIt("denied system calls", async (expected) => {
      const result = await python(SYSCALL_PROBE, 30_000);
      expect(result.status).toBe("ok");
      const results = JSON.parse(result.stdout) as Record<string, string>;
      expect(Object.keys(results).length).toBeGreaterThan(0);
      if (expected === "escapes") {
        // No filter refused them: a no-op unshare(0) and PTRACE_TRACEME went through.
        expect(results).toMatchObject({ unshare: "ok", ptrace: "ok" });
        return;
      }
      const refused = Object.fromEntries(
        Object.keys(results).map((name) => [name, name === "io_uring_setup" || name === "clone3" ? "ENOSYS" : "EPERM"]),
      );
      expect(results).toEqual(refused);
    });

    it("output flood", async () => {
      const result = await python("while True:\n    print('x' * 1000)\n", 10_000);
      // Killed for passing the cap (output_limit), not at the wall-clock limit (timeout).
      expect(result.status).toBe("output_limit");
      expect(result.truncated).toBe(true);
      expect(Buffer.byteLength(result.stdout)).toBeLessThanOrEqual(limits.maxOutputBytes);
    });

    const outsideTargets = (): string[] => {
      const name = `selfheal-hostile-${randomBytes(6).toString("hex")}`;
      const targets = [join(process.cwd(), name), join(homedir(), name), join(tmpdir(), name), join("/etc", name)];
      cleanups.push(() => {
        for (const target of targets) rmSync(target, { force: true });
      });
      return targets;
    };

    for (const language of ["python", "javascript"] as const) {
      const prefix = language === "python" ? "" : "JS ";
      hostileIt(
        `${prefix}write outside the work dir` as EscapingCase,
        async (expected) => {
          const targets = outsideTargets();
          await run({ language, code: writeTargetsProgram(language, targets) });
          expectWritten(expect, targets, expected);
        },
        language === "python" || javascript,
      );
    }

    // A run with network has a proxy socket bound in and a relay on its loopback: neither may lead
    // past the list to the host's own listeners. Where the sandbox gives no allowHosts, the run is
    // the plain case's.
    hostileIt("connect to a host listener beside allowHosts", (expected) =>
      withListener(async (port, connections) => {
        const result = await run({
          language: "python",
          code: connectProgram("python", port),
          allowHosts: ["data.test"],
        });
        await expectConnection(expect, result, connections, expected);
      }),
    );

    hostileIt("read the host's home", async (expected) => {
      // A file of our own in the real home: the sandbox may show an interpreter installed under
      // the home (pyenv), but never anything else that lives there.
      const home = homedir();
      const name = `selfheal-hostile-home-${randomBytes(6).toString("hex")}.txt`;
      const secret = `home-secret-${randomBytes(12).toString("hex")}`;
      writeFileSync(join(home, name), secret, { mode: 0o644 });
      cleanups.push(() => rmSync(join(home, name), { force: true }));
      const code = [
        "import os",
        "try:",
        `    print(sorted(os.listdir(${JSON.stringify(home)})))`,
        `    print(open(${JSON.stringify(join(home, name))}).read())`,
        "except OSError as error:",
        "    print('denied', error)",
      ].join("\n");
      const result = await python(code);
      if (expected === "escapes") {
        expect(result.stdout).toContain(`'${name}'`);
        expect(result.stdout).toContain(secret);
        return;
      }
      // The listing quotes each entry; an error message naming the path we asked for is fine.
      expect(result.stdout).not.toContain(`'${name}'`);
      expect(result.stdout).not.toContain(secret);
    });

    hostileIt("read /etc/shadow", async (expected) => {
      const result = await python(
        "try:\n    print(open('/etc/shadow').read())\nexcept OSError as error:\n    print('denied', error)\n",
      );
      if (expected === "escapes") expect(result.stdout).toMatch(/^root:/m);
      else expect(result.stdout).not.toMatch(/^root:/m);
    });

    hostileIt("read a secret file", async (expected) => {
      const directory = mkdtempSync(join(tmpdir(), "selfheal-secret-"));
      cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
      const secret = `secret-${randomBytes(12).toString("hex")}`;
      const file = join(directory, "secret.txt");
      writeFileSync(file, secret, { mode: 0o644 });
      const result = await python(
        `try:\n    print(open(${JSON.stringify(file)}).read())\nexcept OSError as error:\n    print("denied", error)\n`,
      );
      if (expected === "escapes") expect(result.stdout).toBe(`${secret}\n`);
      else expect(result.stdout + result.stderr).not.toContain(secret);
    });

    it("API key in the environment", async () => {
      const result = await withFakeApiKey(() => python("import os\nprint(dict(os.environ))\n"));
      expect(result.status).toBe("ok");
      expect(result.stdout).not.toContain(FAKE_API_KEY);
      expect(result.stdout).not.toContain("OPENAI_API_KEY");
    });

    it.runIf(javascript)("JS API key in the environment", async () => {
      const result = await withFakeApiKey(() =>
        run({ language: "javascript", code: "console.log(JSON.stringify(process.env));\n" }),
      );
      expect(result.status).toBe("ok");
      expect(result.stdout).not.toContain(FAKE_API_KEY);
    });

    for (const language of ["python", "javascript"] as const) {
      const prefix = language === "python" ? "" : "JS ";
      hostileIt(
        `${prefix}connect to a host listener` as EscapingCase,
        (expected) =>
          withListener(async (port, connections) => {
            const result = await run({ language, code: connectProgram(language, port) });
            await expectConnection(expect, result, connections, expected);
          }),
        language === "python" || javascript,
      );
    }

    hostileIt("setsid grandchild", async (expected) => {
      const marker = newMarker();
      expect((await python(setsidProgram(marker))).stdout).toContain("spawned");
      await expectGone(expect, marker, expected);
    });

    hostileIt("double-forked daemon", async (expected) => {
      const marker = newMarker();
      expect((await python(doubleForkProgram(marker))).stdout).toContain("daemonised");
      await expectGone(expect, marker, expected);
    });

    it("SIGTERM ignored", async () => {
      const code =
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n    time.sleep(0.05)\n";
      // It never ends by itself: the run ending at all proves SIGKILL followed the ignored SIGTERM.
      expect((await python(code, KILL_AFTER_MS)).status).toBe("timeout");
    });

    it("stdout and stderr closed, then sleep", async () => {
      const code = "import os, time\nprint('bye', flush=True)\nos.close(1)\nos.close(2)\ntime.sleep(10**6)\n";
      // Closed pipes do not end the run: it ends when it is killed, here by its signal a second
      // after its last line (a wall clock short enough to be cheap was too short for gVisor's
      // start-up under load; the wall clock itself is the sleep cases'), and its output is kept.
      const stop = new AbortController();
      const result = await sandbox.run(
        { language: "python", code, timeoutMs: 120_000 },
        {
          signal: stop.signal,
          onOutput: (_stream, line) => {
            if (line === "bye") setTimeout(() => stop.abort(), 1_000);
          },
        },
      );
      expect(result.status).toBe("killed");
      expect(result.stdout).toBe("bye\n");
    });

    it("invalid UTF-8 output", async () => {
      const result = await python("import sys\nsys.stdout.buffer.write(b'ok \\xff\\xfe\\xc3 end\\n')\n");
      expect(result.status).toBe("ok");
      expect(result.stdout).toBe("ok \uFFFD\uFFFD\uFFFD end\n");
    });

    it("read stdin", async () => {
      const result = await python("import sys\nprint(len(sys.stdin.read()))\n", 30_000);
      // "ok", not "timeout": stdin gave EOF at once instead of waiting for input that never comes.
      expect(result.status).toBe("ok");
      expect(result.stdout).toBe("0\n");
    });

    it("deep recursion", async () => {
      const result = await python("def down(n):\n    return down(n + 1)\n\ndown(0)\n");
      expect(result.status).toBe("error");
      expect(result.error).toMatchObject({ type: "RecursionError", line: 2 });
    });

    it.runIf(javascript)("JS infinite loop", async () => {
      const result = await run({ language: "javascript", code: "for (;;) {}\n", timeoutMs: KILL_AFTER_MS });
      expect(result.status).toBe("timeout");
    });

    // nsjail and firejail close every descriptor but stdio before the program starts; whatever this
    // test process holds without close-on-exec must not show up inside. Node opens its own with
    // close-on-exec and, at start, marks the inherited ones up to the first gap after fd 15 too: what
    // is left came from the shell or supervisor that started it (`npm test` holds fd 250 open for
    // this). Without one held the case could not tell a sandbox that closes them from one that does not.
    hostileIt("descriptors beyond stdio", async (expected) => {
      const held = inheritableFds();
      expect(
        held,
        "this test process holds no descriptor without close-on-exec, so the case cannot tell; start it with one open above fd 15 (npm test does: `exec 250</dev/null; exec vitest run`)",
      ).not.toEqual([]);
      const result = await python(
        "import os\nprint(sorted(int(n) for n in os.listdir('/proc/self/fd') if os.path.exists(f'/proc/self/fd/{n}')))\n",
      );
      if (expected === "escapes") expect(JSON.parse(result.stdout)).toEqual(expect.arrayContaining(held));
      else expect(result.stdout).toBe("[0, 1, 2]\n");
    });

    // codejail gives each run a TMPDIR of its own; a file left there must not reach the next run.
    hostileIt("TMPDIR kept for the next run", async (expected) => {
      const name = `selfheal-hostile-tmpdir-${randomBytes(6).toString("hex")}`;
      const first = await python(
        `import os, tempfile\nopen(os.path.join(tempfile.gettempdir(), "${name}"), "w").write("x")\nprint(tempfile.gettempdir())\n`,
      );
      expect(first.status).toBe("ok");
      // The host's own temp dir: where a program that ignored TMPDIR would have left it.
      cleanups.push(() => rmSync(join(first.stdout.trim(), name), { force: true }));
      const check = await python(
        `import os, tempfile\nprint(os.path.exists(os.path.join(tempfile.gettempdir(), "${name}")))\n`,
      );
      expect(check.stdout).toBe(expected === "escapes" ? "True\n" : "False\n");
    });

    // firejail and nsjail mount private /tmp and /dev/shm: a file one run leaves in the shared
    // places, by absolute path, must not be there for the next run.
    hostileIt("shared temporary places", async (expected) => {
      const name = `selfheal-hostile-shared-${randomBytes(6).toString("hex")}`;
      const places = SHARED_PLACES.map((place) => join(place, name));
      cleanups.push(() => {
        for (const place of places) rmSync(place, { force: true });
      });
      await python(
        `for path in ${JSON.stringify(places)}:\n    try:\n        open(path, "w").write("x")\n    except OSError:\n        pass\n`,
      );
      const check = `import os\nprint([path for path in ${JSON.stringify(places)} if os.path.exists(path)])\n`;
      const seen = JSON.parse((await python(check)).stdout.replace(/'/g, '"')) as string[];
      if (expected === "escapes") {
        // The second run found the first one's file in the host's /tmp.
        expect(seen).toContain(join("/tmp", name));
        return;
      }
      expect(seen).toEqual([]);
      expect(places.filter((place) => existsSync(place))).toEqual([]);
    });
  });
}
