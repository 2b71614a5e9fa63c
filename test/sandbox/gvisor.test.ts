import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { afterAll, describe, expect, it } from "vitest";

import { SandboxUnavailableError } from "../../src/core/errors.js";
import { buildGvisorSpec, checkSandbox, createSandbox, DEFAULT_LIMITS, probeGvisor } from "../../src/sandbox/index.js";
import { gvisorMissing } from "../helpers/capabilities.js";

const missing = gvisorMissing();

interface SpecMount {
  destination: string;
  source: string;
  options?: string[];
}

describe("the gVisor probe", () => {
  it("says how to install runsc when it is not on PATH", () => {
    expect(probeGvisor("/nonexistent")).toContain("apt-get install runsc");
  });

  it("makes checkSandbox refuse the gvisor kind before a run when runsc is not on PATH", async () => {
    const path = process.env.PATH;
    process.env.PATH = "/nonexistent";
    try {
      const check = checkSandbox({ kind: "gvisor" });
      await expect(check).rejects.toBeInstanceOf(SandboxUnavailableError);
      await expect(check).rejects.toThrow("apt-get install runsc");
    } finally {
      process.env.PATH = path;
    }
  });
});

describe("the gVisor spec", () => {
  const spec = buildGvisorSpec({
    language: "python",
    limits: DEFAULT_LIMITS,
    executable: "/usr/bin/python3",
    prefixes: ["/usr", "/opt/python"],
    rootfs: "/support/gvisor-root",
    workDir: "/tmp/run/work",
    tmpDir: null,
    etc: [{ source: "/support/etc/passwd", target: "/etc/passwd" }],
  }) as { process: { user: { uid: number }; rlimits: { type: string }[] }; mounts: SpecMount[] };

  it("binds nothing of the host but /usr, the interpreter, the generated /etc and the work dir", () => {
    const binds = spec.mounts.filter((mount) => mount.source.startsWith("/")).map((mount) => mount.destination);
    expect(binds.filter((destination) => !/^\/(lib|lib32|lib64|libx32|bin|sbin)$/.test(destination))).toEqual([
      "/usr",
      "/opt/python",
      "/etc/passwd",
      "/work",
    ]);
    for (const mount of spec.mounts.filter((entry) => entry.destination !== "/work" && entry.source.startsWith("/"))) {
      expect(mount.options).toContain("ro");
    }
  });

  it("runs the program as an unprivileged uid under the run's rlimits", () => {
    expect(spec.process.user.uid).not.toBe(0);
    expect(spec.process.rlimits.map((limit) => limit.type)).toEqual(
      expect.arrayContaining(["RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_AS", "RLIMIT_NPROC"]),
    );
  });
});

describe.skipIf(missing !== null)(`the gVisor sandbox${missing ? ` (skipped: ${missing})` : ""}`, () => {
  // gVisor's ptrace platform traps every system call: on a loaded machine a run takes seconds, so
  // the deadline is generous wherever a case is about containment rather than the deadline itself.
  const sandbox = createSandbox({ kind: "gvisor", limits: { timeoutMs: 30_000 } });
  const secretDir = mkdtempSync(join(tmpdir(), "selfheal-gvisor-secret-"));
  const secretFile = join(secretDir, "secret.txt");
  writeFileSync(secretFile, "the host's secret\n");

  afterAll(async () => {
    await sandbox.close();
    rmSync(secretDir, { recursive: true, force: true });
  });

  it("prints what a Python program prints", async () => {
    const result = await sandbox.run({ language: "python", code: "print(1)" });
    expect(result).toMatchObject({ status: "ok", exitCode: 0, stdout: "1\n" });
  });

  it("reports an exception with its traceback and the line in the program", async () => {
    const result = await sandbox.run({
      language: "python",
      code: "def divide(a, b):\n    return a / b\n\nprint(divide(1, 0))\n",
    });
    expect(result.status).toBe("error");
    expect(result.error).toMatchObject({ type: "ZeroDivisionError", line: 2 });
    expect(result.stderr).toContain("Traceback (most recent call last)");
  });

  it("runs JavaScript and feeds stdin", async () => {
    const result = await sandbox.run({
      language: "javascript",
      code: "process.stdin.on('data', (d) => console.log(String(d).toUpperCase()));",
      stdin: "hello",
    });
    expect(result).toMatchObject({ status: "ok", stdout: "HELLO\n" });
  });

  it("kills an endless loop at the deadline and reports a timeout", async () => {
    const result = await sandbox.run({ language: "python", code: "while True:\n    pass\n", timeoutMs: 1_500 });
    // The loop never ends by itself: "timeout" is the deadline's doing.
    expect(result.status).toBe("timeout");
  });

  it("gives the program no network, not even to the host", async () => {
    const result = await sandbox.run({
      language: "python",
      code: [
        "import socket",
        "for host in ('1.1.1.1', '10.0.2.2', '192.168.10.1'):",
        "    try:",
        "        socket.create_connection((host, 80), timeout=1)",
        "        print('connected', host)",
        "    except OSError:",
        "        pass",
        "print('done')",
      ].join("\n"),
    });
    expect(result).toMatchObject({ status: "ok", stdout: "done\n" });
  });

  it("cannot read the host's files: /etc/shadow, the home dir, a file in the host's /tmp", async () => {
    const paths = ["/etc/shadow", join(process.env.HOME ?? "/root", ".bashrc"), secretFile];
    const result = await sandbox.run({
      language: "python",
      code: [
        "import sys",
        `for path in ${JSON.stringify(paths)}:`,
        "    try:",
        "        print('read', path, open(path).read()[:20])",
        "    except OSError as error:",
        "        print('refused', type(error).__name__)",
      ].join("\n"),
    });
    expect(result.status).toBe("ok");
    expect(result.stdout).not.toContain("read ");
    expect(result.stdout.trim().split("\n")).toHaveLength(3);
  });

  it("cannot write outside the work dir", async () => {
    const result = await sandbox.run({
      language: "python",
      code: [
        `for path in ('/usr/selfheal-escape', '/etc/selfheal-escape', ${JSON.stringify(join(secretDir, "escape"))}):`,
        "    try:",
        "        open(path, 'w').write('x')",
        "        print('wrote', path)",
        "    except OSError:",
        "        pass",
        "open('inside.txt', 'w').write('fine')",
        "print(open('inside.txt').read())",
      ].join("\n"),
    });
    expect(result).toMatchObject({ status: "ok", stdout: "fine\n" });
  });

  it("stops a fork bomb at the process limit", { timeout: 120_000 }, async () => {
    const result = await sandbox.run({
      language: "python",
      // Forks under ptrace are slow, and under load slower still (it once timed out at 5 s in CI).
      timeoutMs: 90_000,
      // Bounded in itself: at most 200 children, each sleeping 3 s, whatever the sandbox allows.
      code: [
        "import os, time",
        "started = 0",
        "for _ in range(200):",
        "    try:",
        "        if os.fork() == 0:",
        "            time.sleep(3)",
        "            os._exit(0)",
        "        started += 1",
        "    except OSError:",
        "        break",
        "print(started)",
      ].join("\n"),
    });
    expect(result.status).toBe("ok");
    expect(Number(result.stdout.trim())).toBeLessThan(DEFAULT_LIMITS.maxProcesses);
  });
});
