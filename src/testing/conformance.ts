// Over 400 lines: one suite whose cases are a flat list under one describe(), sharing one
// sandbox and its helpers; each case is a few lines, and splitting them would scatter the contract.
import { createHash, randomInt } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { resolveLimits } from "../sandbox/limits.js";
import { RUN_CANCELLED_NOTE } from "../sandbox/run/run-child.js";
import type {
  Containment,
  Language,
  OutputStream,
  RunHooks,
  RunRequest,
  Sandbox,
  SandboxLimits,
} from "../sandbox/types.js";
import { describeEgressCases, type EgressClaim } from "./egress.js";
import { forkAndSleep, goneWithin, type OwnerCommand, startOwner } from "./owner.js";
import { pidsWithMarker } from "./processes.js";
import type { TestRunner } from "./runner.js";

export interface ConformanceOptions {
  /** The test functions to register the cases with: `{ describe, it, expect, beforeAll, afterAll, afterEach }` from vitest. */
  runner: TestRunner;
  /**
   * The limits `makeSandbox` gives its sandbox (the rest are selfheal's defaults): the limit cases
   * are drawn from them, e.g. the memory case allocates four times `memoryMb`.
   */
  limits?: Partial<SandboxLimits>;
  /** The languages the backend runs; both by default. */
  languages?: readonly Language[];
  /** Vitest's timeout for each case; a slow backend (gVisor's ptrace platform) may need more. */
  testTimeoutMs?: number;
  /**
   * What the backend cannot do, each with the reason: a literal list in your test file. Each listed
   * case asserts the gap itself (the failure it causes), so a gap that closes fails until removed.
   */
  gaps?: Partial<Record<ConformanceGap, string>>;
  /**
   * A host of your sandbox in a process of its own (see `OwnerCommand`): with it, the suite
   * SIGKILLs that host mid-run and requires every process of the run gone within 10 s.
   */
  owner?: OwnerCommand;
  /**
   * How the backend gives `allowHosts`, written down (its `egress`): "enforced", "offered", or
   * undefined for not at all. The egress cases check the claim, and what it promises.
   */
  egress?: EgressClaim;
}

/** The cases a backend may list as gaps. */
export type ConformanceGap = "javascript ES module syntax" | "owner SIGKILLed mid-run";

/**
 * The sandbox contract (see `Sandbox` in selfheal) as a suite of tests: register it in a test file, with your runner's test functions,
 * with a factory for your backend and every case of the contract runs against a sandbox it made.
 * Results, files in, artifacts out, streaming, cancel, close and describe() hold for every backend;
 * the memory, CPU, process and disk limits are put to the test as the backend's describe() declares
 * them: a limit declared for the run or per process must stop the program that overruns it, and one
 * declared `none` must say why. The wall clock and the output cap always hold.
 */
export function describeSandboxConformance(
  name: string,
  makeSandbox: () => Sandbox | Promise<Sandbox>,
  options: ConformanceOptions,
): void {
  const { describe, it, expect, beforeAll, afterAll } = options.runner;
  const limits = resolveLimits(options.limits);
  const languages = options.languages ?? ["python", "javascript"];
  const timeout = options.testTimeoutMs ?? 60_000;
  const javascript = languages.includes("javascript");

  describe(`the sandbox contract: ${name}`, { timeout }, () => {
    let sandbox: Sandbox;
    const made: Sandbox[] = [];
    const run = (request: RunRequest, hooks?: RunHooks) => sandbox.run(request, hooks);
    const python = (code: string, extra: Partial<RunRequest> = {}, hooks?: RunHooks) =>
      run({ language: "python", code, ...extra }, hooks);
    /** Runs a limit probe, which prints how far it got and how it stopped, as two words. */
    const probeLimit = async (lines: string[]): Promise<[reached: number, failure: string]> => {
      const result = await python(lines.join("\n"), { timeoutMs: 60_000 });
      const [reached, failure = ""] = result.stdout.trim().split(" ");
      return [Number(reached), failure];
    };
    const scratch: string[] = [];
    const hostFolder = (): string => {
      const folder = mkdtempSync(join(tmpdir(), "selfheal-conformance-"));
      scratch.push(folder);
      return folder;
    };

    beforeAll(async () => {
      sandbox = await makeSandbox();
      made.push(sandbox);
    });
    afterAll(async () => {
      for (const each of made) await each.close();
      for (const folder of scratch) rmSync(folder, { recursive: true, force: true });
    });

    describe("results", () => {
      it("runs Python and returns what it printed, exit code 0 and no error", async () => {
        const result = await python("print('hello from python')\n");
        expect(result).toMatchObject({
          status: "ok",
          exitCode: 0,
          signal: null,
          stdout: "hello from python\n",
          stderr: "",
          truncated: false,
        });
        expect(result.error).toBeUndefined();
        expect(result.durationMs).toBeGreaterThanOrEqual(0);
      });

      it.runIf(javascript)("runs JavaScript as CommonJS", async () => {
        const result = await run({
          language: "javascript",
          code: "const os = require('os');\nconsole.log(typeof os.cpus);\n",
        });
        expect(result).toMatchObject({ status: "ok", stdout: "function\n" });
      });

      const esModuleGap = options.gaps?.["javascript ES module syntax"];
      it.runIf(javascript)(
        esModuleGap
          ? `fails JavaScript with ES module syntax, as listed for this backend (${esModuleGap})`
          : "runs JavaScript as an ES module",
        async () => {
          const result = await run({
            language: "javascript",
            code: "import os from 'node:os';\nconsole.log(typeof os.cpus);\n",
          });
          if (esModuleGap) expect(result).toMatchObject({ status: "error", error: { type: "SyntaxError" } });
          else expect(result).toMatchObject({ status: "ok", stdout: "function\n" });
        },
      );

      it("feeds stdin to the program", async () => {
        const result = await python("import sys\nprint(sys.stdin.read().upper())\n", { stdin: "abc\ndef" });
        expect(result.stdout).toBe("ABC\nDEF\n");
      });

      it("reports a non-zero exit as an error with the parsed traceback", async () => {
        const result = await python("x = 1\nprint(x)\nraise ValueError('bad value')\n");
        expect(result).toMatchObject({ status: "error", exitCode: 1, stdout: "1\n" });
        expect(result.error).toMatchObject({ type: "ValueError", message: "bad value", line: 3 });
        expect(result.error?.traceback).toContain('File "main.py", line 3');
      });

      it.runIf(javascript)("reports a JavaScript exception with its line", async () => {
        const result = await run({
          language: "javascript",
          code: "const config = undefined;\nconsole.log(config.port);\n",
        });
        expect(result.status).toBe("error");
        expect(result.error).toMatchObject({ type: "TypeError", line: 2 });
      });

      it("keeps the exit code of sys.exit", async () => {
        const result = await python("import sys\nsys.exit(3)\n");
        expect(result).toMatchObject({ status: "error", exitCode: 3 });
      });

      it("decodes invalid UTF-8 with replacement characters", async () => {
        const result = await python("import sys\nsys.stdout.buffer.write(b'a\\xffb\\n')\n");
        expect(result.stdout).toBe("a\uFFFDb\n");
      });
    });

    describe("files in", () => {
      it("writes request files next to the code", async () => {
        const result = await python("print(open('data/input.txt').read().strip())\n", {
          files: { "data/input.txt": "42\n" },
        });
        expect(result).toMatchObject({ status: "ok", stdout: "42\n" });
      });

      it("puts input files into the work dir, readable", async () => {
        const content = new TextEncoder().encode("a,b\n1,2\n");
        const result = await python("print(open('sales.csv').read().splitlines()[1])\n", {
          inputs: [{ name: "sales.csv", content }],
        });
        expect(result).toMatchObject({ status: "ok", stdout: "1,2\n" });
      });

      it("refuses a request file or input that would land outside the work dir", async () => {
        await expect(python("print(1)", { files: { "../escape.txt": "x" } })).rejects.toThrow(
          /must stay inside the work dir/,
        );
        for (const name of ["../x", "/etc/x", "a/../../x"]) {
          await expect(python("print(1)", { inputs: [{ name, content: new Uint8Array(1) }] })).rejects.toThrow(
            /must stay inside the work dir/,
          );
        }
      });

      it("starts every run in a fresh work dir", async () => {
        await python("open('left-behind.txt', 'w').write('x')\nleaked = 1\n");
        const result = await python("import os\nprint(os.path.exists('left-behind.txt'), 'leaked' in globals())\n");
        expect(result.stdout).toBe("False False\n");
      });
    });

    describe("artifacts out", () => {
      it("copies what the program writes under out/ to the host, with size, sha256 and media type", async () => {
        const into = hostFolder();
        const result = await python(
          "import os\nos.makedirs('out/deep', exist_ok=True)\nopen('out/deep/r.csv','w').write('x,y\\n')",
          { collectArtifacts: { into, maxFiles: 4, maxBytes: 1000 } },
        );
        expect(result.artifacts?.files).toEqual([
          {
            name: "out/deep/r.csv",
            bytes: 4,
            sha256: createHash("sha256").update("x,y\n").digest("hex"),
            mediaType: "text/csv",
          },
        ]);
        expect(readFileSync(join(into, "out/deep/r.csv"), "utf8")).toBe("x,y\n");
      });

      it("stops at the count limit and says how many files were left behind", async () => {
        const result = await python("for i in range(6): open(f'out/{i}.txt','w').write('x')", {
          collectArtifacts: { into: hostFolder(), maxFiles: 4, maxBytes: 1000 },
        });
        expect(result.artifacts?.files.map((file) => file.name)).toEqual([
          "out/0.txt",
          "out/1.txt",
          "out/2.txt",
          "out/3.txt",
        ]);
        expect(result.artifacts?.problems).toEqual([
          expect.stringMatching(/too many artifacts: 6 files .* limit is 4; 2 not/),
        ]);
      });

      it("leaves out a file over the byte limit, with a sentence that says so", async () => {
        const result = await python(
          "open('out/big.bin','wb').write(b'x' * 5000)\nopen('out/small.txt','w').write('ok')",
          {
            collectArtifacts: { into: hostFolder(), maxFiles: 4, maxBytes: 1000 },
          },
        );
        expect(result.artifacts?.files.map((file) => file.name)).toEqual(["out/small.txt"]);
        expect(result.artifacts?.problems).toEqual([
          expect.stringMatching(/out\/big.bin is 5000 bytes, over .* limit/),
        ]);
      });

      it("does not follow a symlink in out/ that points outside the work dir", async () => {
        const into = hostFolder();
        const result = await python(
          "import os\nos.symlink('/etc/passwd', 'out/passwd')\nos.symlink('/etc', 'out/etc')",
          {
            collectArtifacts: { into, maxFiles: 4, maxBytes: 1000 },
          },
        );
        expect(result.artifacts?.files).toEqual([]);
        expect(result.artifacts?.problems.join("\n")).toMatch(/out\/passwd is a symlink/);
        expect(existsSync(join(into, "out/passwd"))).toBe(false);
        expect(existsSync(join(into, "out/etc"))).toBe(false);
      });

      it("collects nothing through out/ itself replaced by a symlink", async () => {
        // Where out/ is a mount point (the container's) the program cannot replace it: then nothing
        // is collected either, and the program says it was refused.
        const code = [
          "import os",
          "try:",
          "    os.rmdir('out')",
          "    os.symlink('/etc', 'out')",
          "    print('replaced')",
          "except OSError:",
          "    print('refused')",
        ].join("\n");
        const result = await python(code, { collectArtifacts: { into: hostFolder(), maxFiles: 4, maxBytes: 1000 } });
        expect(result.artifacts?.files).toEqual([]);
        if (result.stdout === "replaced\n") {
          expect(result.artifacts?.problems).toEqual([expect.stringMatching(/out is not a directory/)]);
        } else expect(result.stdout).toBe("refused\n");
      });
    });

    describe("streaming and cancel", () => {
      it("streams each line while the program is still running", async () => {
        // The program never ends by itself: it sleeps until the run is cancelled, which happens only
        // once both lines reached us. However slow the machine, those lines came while it ran.
        const seen: string[] = [];
        const controller = new AbortController();
        const code = [
          "import sys, time",
          "print('first', flush=True)",
          "print('oops', file=sys.stderr, flush=True)",
          "time.sleep(600)",
        ].join("\n");
        const onOutput = (stream: OutputStream, line: string) => {
          seen.push(`${stream}:${line}`);
          if (seen.length === 2) controller.abort();
        };
        const result = await python(code, { timeoutMs: 120_000 }, { onOutput, signal: controller.signal });
        // Two pipes: a line on stdout and one on stderr may arrive in either order.
        expect([...seen].sort()).toEqual(["stderr:oops", "stdout:first"]);
        expect(result.status).toBe("killed");
      });

      it("kills the whole run when its signal aborts, and says so", async () => {
        const marker = `300.${randomInt(1_000_000, 9_999_999)}`;
        const controller = new AbortController();
        const code = `import subprocess\nprint('started', flush=True)\nsubprocess.run(['sleep', '${marker}'])\n`;
        const result = await python(
          code,
          { timeoutMs: 120_000 },
          { onOutput: (_stream, line) => line === "started" && controller.abort(), signal: controller.signal },
        );
        expect(result.status).toBe("killed");
        expect(result.stdout).toBe("started\n");
        expect(result.stderr).toContain(RUN_CANCELLED_NOTE);
        expect(pidsWithMarker(marker)).toEqual([]);
      });

      it("ends at once a run whose signal has already aborted", async () => {
        const result = await python("print('ran')", { timeoutMs: 120_000 }, { signal: AbortSignal.abort() });
        expect(result.status).toBe("killed");
        expect(result.stdout).toBe("");
      });
    });

    describe("limits", () => {
      it("stops a program at the wall-clock limit", async () => {
        const result = await python("import time\ntime.sleep(30)\n", { timeoutMs: 500 });
        // Not before the limit; "timeout" says the limit, not the program's 30 s, ended it.
        expect(result.status).toBe("timeout");
        expect(result.durationMs).toBeGreaterThanOrEqual(450);
      });

      it("caps output per stream and marks it truncated", async () => {
        const result = await python(`import sys\nsys.stderr.write('e' * ${limits.maxOutputBytes * 3})\n`);
        expect(result.status).toBe("output_limit");
        expect(result.truncated).toBe(true);
        expect(result.stderr.length).toBe(limits.maxOutputBytes);
      });

      it("holds the memory limit as describe() declares it", async ({ skip }) => {
        // Skipped, not passed: the report shows the backend declares no such limit.
        if (declaredScope(expect, sandbox.describe().memory) === "none") skip("describe() declares no memory limit");
        const fits = await python(
          `data = bytearray(${Math.floor(limits.memoryMb / 4)} * 1024 ** 2)\nprint(len(data) > 0)\n`,
        );
        expect(fits).toMatchObject({ status: "ok", stdout: "True\n" });
        const result = await python(`data = bytearray(${limits.memoryMb * 4} * 1024 ** 2)\nprint('escaped')\n`);
        expect(result.status).toBe("memory_limit");
        expect(result.stdout).toBe("");
      });

      it.runIf(javascript)("holds the memory limit for Node, in the heap and outside it", async ({ skip }) => {
        // Skipped, not passed: the report shows the backend declares no such limit.
        if (declaredScope(expect, sandbox.describe().memory) === "none") skip("describe() declares no memory limit");
        for (const allocation of ["new Array(1e6).fill(1)", "Buffer.alloc(64 * 1024 * 1024, 1)"]) {
          const code = `const hoard = [];\nfor (;;) hoard.push(${allocation});\n`;
          const result = await run({ language: "javascript", code });
          expect(result.status).toBe("memory_limit");
        }
      });

      it("applies a run's own memory limit over the sandbox's, more or less", async ({ skip }) => {
        // Skipped, not passed: the report shows the backend declares no such limit.
        if (declaredScope(expect, sandbox.describe().memory) === "none") skip("describe() declares no memory limit");
        // One and a half times the sandbox's memory: refused under its limits, granted with four
        // times as much. Touching that many pages takes seconds of CPU on a slow host: the CPU
        // limit is raised for these runs so that only memory decides.
        const cpu = { cpuSeconds: Math.max(60, limits.cpuSeconds) };
        const code = `data = bytearray(${Math.floor(limits.memoryMb * 1.5)} * 1024 ** 2)\nprint('allocated')\n`;
        expect((await python(code, { limits: cpu, timeoutMs: 120_000 })).status).toBe("memory_limit");
        const more = await python(code, { limits: { ...cpu, memoryMb: limits.memoryMb * 4 }, timeoutMs: 120_000 });
        expect(more).toMatchObject({ status: "ok", stdout: "allocated\n" });
        // A quarter fits the sandbox's limits, not a run given an eighth.
        const small = `data = bytearray(${Math.floor(limits.memoryMb / 4)} * 1024 ** 2)\nprint('allocated')\n`;
        expect(await python(small)).toMatchObject({ status: "ok", stdout: "allocated\n" });
        expect((await python(small, { limits: { memoryMb: Math.floor(limits.memoryMb / 8) } })).status).toBe(
          "memory_limit",
        );
      });

      it("applies a run's own output cap over the sandbox's", async () => {
        const cap = Math.floor(limits.maxOutputBytes / 4);
        const result = await python(`import sys\nsys.stdout.write('o' * ${limits.maxOutputBytes})\n`, {
          limits: { maxOutputBytes: cap },
        });
        expect(result.status).toBe("output_limit");
        expect(result.stdout.length).toBe(cap);
      });

      it("holds the CPU limit as describe() declares it", async ({ skip }) => {
        // Skipped, not passed: the report shows the backend declares no such limit.
        if (declaredScope(expect, sandbox.describe().cpu) === "none") skip("describe() declares no cpu limit");
        // Spins until it has used three times its CPU budget, then says so: only the CPU limit can
        // stop it first, whatever the wall clock (which is far away) does.
        const code = `import time\nwhile time.process_time() < ${limits.cpuSeconds * 3}:\n    pass\nprint('escaped')\n`;
        const result = await python(code, { timeoutMs: 120_000 + limits.cpuSeconds * 3_000 });
        expect(result.stdout).toBe("");
        expect(result.status).toBe("timeout");
      });

      it("holds the process limit as describe() declares it", async ({ skip }) => {
        // Skipped, not passed: the report shows the backend declares no such limit.
        if (declaredScope(expect, sandbox.describe().processes) !== "run")
          skip("describe() declares no processes limit for the whole run");
        const wanted = limits.maxProcesses + 8;
        const [started, failure] = await probeLimit([
          "import subprocess",
          "children = []",
          "failure = 'none'",
          `for _ in range(${wanted}):`,
          "    try:",
          "        children.append(subprocess.Popen(['sleep', '60']))",
          "    except OSError as error:",
          "        failure = type(error).__name__",
          "        break",
          "print(len(children), failure)",
          "for child in children: child.kill()",
        ]);
        expect(started).toBeLessThan(limits.maxProcesses);
        expect(failure).not.toBe("none");
      });

      it("holds the disk limit as describe() declares it", async ({ skip }) => {
        // Skipped, not passed: the report shows the backend declares no such limit.
        if (declaredScope(expect, sandbox.describe().disk) === "none") skip("describe() declares no disk limit");
        // One file larger than both the per-file and the whole-run limit: either stops it.
        const ceiling = Math.max(limits.maxFileMb, limits.maxDiskMb) + 1;
        const [written, failure] = await probeLimit([
          "import errno",
          "block = b'x' * (1024 * 1024)",
          "written = 0",
          "failure = 'none'",
          "try:",
          "    with open('big.bin', 'wb') as handle:",
          `        for _ in range(${ceiling}):`,
          "            handle.write(block)",
          "            handle.flush()",
          "            written += 1",
          "except OSError as error:",
          "    failure = errno.errorcode.get(error.errno, str(error.errno))",
          "print(written, failure)",
        ]);
        expect(written).toBeLessThan(ceiling);
        expect(["EFBIG", "ENOSPC", "EDQUOT"]).toContain(failure);
      });
    });

    const owner = options.owner;
    if (owner)
      describe("owner death", () => {
        const ownerGap = options.gaps?.["owner SIGKILLed mid-run"];
        for (const language of languages) {
          const title = ownerGap
            ? `leaves the ${language} run behind when its owner is SIGKILLed, as listed for this backend (${ownerGap})`
            : `ends the ${language} run, forked children too, when its owner is SIGKILLed mid-run`;
          it(title, async () => {
            // Sleep seconds as the marker, under a minute: bounded should the run outlive its owner.
            const marker = `59.${randomInt(1_000_000, 9_999_999)}`;
            const host = await startOwner(owner, { language, code: forkAndSleep(language, marker), timeoutMs: 60_000 });
            host.kill("SIGKILL");
            // A deadline, not a speed target: on a loaded machine the watchdog and the kernel are slow.
            // A listed gap waits less: its run is expected to stay, and 5 s is time enough to go.
            const left = await goneWithin(ownerGap ? 5_000 : 30_000, () => pidsWithMarker(marker));
            for (const pid of left) process.kill(pid, "SIGKILL");
            if (ownerGap) expect(left).not.toEqual([]);
            else expect(left).toEqual([]);
          });
        }
      });

    describe("describe and close", () => {
      it("describes itself: its kind, and what holds each limit, with a reason for every one", () => {
        const isolation = sandbox.describe();
        expect(isolation.kind).toBe(sandbox.kind);
        for (const limit of ["memory", "processes", "cpu", "disk", "syscalls"] as const) {
          expect(["run", "process", "none"]).toContain(isolation[limit].scope);
          expect(isolation[limit].by.trim()).not.toBe("");
        }
        expect(Array.isArray(isolation.notes)).toBe(true);
      });

      it("closes once used, and again without harm", async () => {
        const own = await makeSandbox();
        made.push(own);
        expect(await own.run({ language: "python", code: "print('once')" })).toMatchObject({ stdout: "once\n" });
        await own.close();
        await own.close();
      });
    });

    describeEgressCases(options.runner, () => sandbox, options.egress);
  });
}

/** The scope a limit is declared with; a declaration without its reason fails here. */
function declaredScope(expect: TestRunner["expect"], containment: Containment): Containment["scope"] {
  expect(containment.by.trim()).not.toBe("");
  return containment.scope;
}
