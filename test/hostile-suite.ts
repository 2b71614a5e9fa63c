import { randomBytes, randomInt } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";

import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

import type { ManagedSandbox } from "../src/sandbox/index.js";
import type { RunRequest, RunResult } from "../src/sandbox/types.js";

/**
 * The hostile-code suite: one test per thing generated code may do to the machine running it.
 * It is shared by every backend; a backend lists the cases it cannot contain, with the reason, and
 * those run as `it.fails`, so the suite proves the gap is real instead of hiding it. The README's
 * table of guarantees is this list.
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
  | "JS connect to a host listener";

export interface HostileSuiteOptions {
  /** Builds the sandbox under test; it is closed after the suite. */
  createSandbox: () => ManagedSandbox;
  /** Cases this backend cannot contain, each with the reason; they are expected to fail. */
  uncontained?: Partial<Record<HostileCase, string>>;
  /** The process cap the sandbox was created with, for the fork bomb. */
  maxProcesses: number;
}

/** Short wall clock for cases that only end when the sandbox kills them. */
const KILL_AFTER_MS = 1_500;
/** The fork bomb stops by itself after this many children, so a broken sandbox cannot hurt the host. */
const FORK_BOMB_CEILING = 200;
const FAKE_API_KEY = `sk-selfheal-test-${randomBytes(8).toString("hex")}`;

export function describeHostileSuite(title: string, options: HostileSuiteOptions): void {
  describe(title, () => {
    let sandbox: ManagedSandbox;
    const markers: string[] = [];
    const cleanups: (() => void)[] = [];

    beforeAll(() => {
      sandbox = options.createSandbox();
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
    /** A unique sleep duration: it is how we find the program's leftover processes on the host. */
    const newMarker = (): string => {
      const marker = `${randomInt(600, 900)}.${randomInt(1_000_000, 9_999_999)}`;
      markers.push(marker);
      return marker;
    };

    const hostileIt = (name: HostileCase, body: () => Promise<void>): void => {
      const reason = options.uncontained?.[name];
      if (reason) it.fails(`${name} (not contained: ${reason})`, body);
      else it(name, body);
    };

    hostileIt("infinite loop", async () => {
      const result = await run({ language: "python", code: "while True:\n    pass\n", timeoutMs: KILL_AFTER_MS });
      expect(result.status).toBe("timeout");
      expect(result.durationMs).toBeLessThan(KILL_AFTER_MS + 2_000);
    });

    hostileIt("sleep forever", async () => {
      const result = await run({
        language: "python",
        code: "import time\ntime.sleep(10**6)\n",
        timeoutMs: KILL_AFTER_MS,
      });
      expect(result.status).toBe("timeout");
    });

    hostileIt("memory bomb", async () => {
      const code = "blocks = []\nwhile True:\n    blocks.append(bytearray(32 * 1024 * 1024))\n";
      const result = await run({ language: "python", code, timeoutMs: 10_000 });
      expect(result.status).toBe("memory_limit");
    });

    hostileIt("fork bomb", async () => {
      const marker = newMarker();
      const code = [
        "import os",
        "forks = 0",
        `for _ in range(${FORK_BOMB_CEILING}):`,
        "    try:",
        "        pid = os.fork()",
        "    except OSError:",
        "        break",
        "    if pid == 0:",
        "        try:",
        `            os.execv("/bin/sleep", ["sleep", "${marker}"])`,
        "        finally:",
        "            os._exit(0)",
        "    forks += 1",
        "print(forks, flush=True)",
      ].join("\n");
      const result = await run({ language: "python", code, timeoutMs: 10_000 });
      const forks = Number(result.stdout.trim());
      expect(forks).toBeGreaterThan(0);
      expect(forks).toBeLessThan(options.maxProcesses);
      expect(await waitUntilGone(marker)).toEqual([]);
    });

    hostileIt("output flood", async () => {
      const result = await run({ language: "python", code: "while True:\n    print('x' * 1000)\n", timeoutMs: 10_000 });
      expect(result.status).toBe("output_limit");
      expect(result.truncated).toBe(true);
      expect(Buffer.byteLength(result.stdout)).toBeLessThanOrEqual(65_536);
      // Killed as soon as it passed the cap, not at the wall-clock limit.
      expect(result.durationMs).toBeLessThan(5_000);
    });

    const outsideTargets = (): string[] => {
      const name = `selfheal-hostile-${randomBytes(6).toString("hex")}`;
      const targets = [join(process.cwd(), name), join(homedir(), name), join(tmpdir(), name), join("/etc", name)];
      cleanups.push(() => {
        for (const target of targets) rmSync(target, { force: true });
      });
      return targets;
    };

    hostileIt("write outside the work dir", async () => {
      const targets = outsideTargets();
      const code = [
        `for target in ${JSON.stringify(targets)}:`,
        "    try:",
        "        with open(target, 'w') as handle:",
        "            handle.write('pwned')",
        "    except OSError:",
        "        pass",
      ].join("\n");
      await run({ language: "python", code });
      expect(targets.filter((target) => existsSync(target))).toEqual([]);
    });

    hostileIt("read the host's home", async () => {
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
      const result = await run({ language: "python", code });
      // The listing quotes each entry; an error message naming the path we asked for is fine.
      expect(result.stdout).not.toContain(`'${name}'`);
      expect(result.stdout).not.toContain(secret);
    });

    hostileIt("read /etc/shadow", async () => {
      const code =
        "try:\n    print(open('/etc/shadow').read())\nexcept OSError as error:\n    print('denied', error)\n";
      const result = await run({ language: "python", code });
      expect(result.stdout).not.toMatch(/^root:/m);
    });

    hostileIt("read a secret file", async () => {
      const directory = mkdtempSync(join(tmpdir(), "selfheal-secret-"));
      cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
      const secret = `secret-${randomBytes(12).toString("hex")}`;
      const file = join(directory, "secret.txt");
      writeFileSync(file, secret, { mode: 0o644 });
      const code = `try:\n    print(open(${JSON.stringify(file)}).read())\nexcept OSError as error:\n    print("denied", error)\n`;
      const result = await run({ language: "python", code });
      expect(result.stdout + result.stderr).not.toContain(secret);
    });

    hostileIt("API key in the environment", async () => {
      const result = await withFakeApiKey(() =>
        run({ language: "python", code: "import os\nprint(dict(os.environ))\n" }),
      );
      expect(result.status).toBe("ok");
      expect(result.stdout).not.toContain(FAKE_API_KEY);
      expect(result.stdout).not.toContain("OPENAI_API_KEY");
    });

    hostileIt("connect to a host listener", async () => {
      await withListener(async (port, connections) => {
        const code = [
          "import socket",
          "try:",
          `    socket.create_connection(("127.0.0.1", ${port}), timeout=2).sendall(b"leak")`,
          "    print('connected')",
          "except OSError as error:",
          "    print('blocked', error)",
        ].join("\n");
        const result = await run({ language: "python", code });
        expect(result.stdout).toContain("blocked");
        expect(connections()).toBe(0);
      });
    });

    hostileIt("setsid grandchild", async () => {
      const marker = newMarker();
      const code = `import subprocess\nsubprocess.Popen(["setsid", "sleep", "${marker}"], start_new_session=True)\nprint("spawned")\n`;
      const result = await run({ language: "python", code });
      expect(result.stdout).toContain("spawned");
      expect(await waitUntilGone(marker)).toEqual([]);
    });

    hostileIt("double-forked daemon", async () => {
      const marker = newMarker();
      const code = [
        "import os",
        "if os.fork() == 0:",
        "    os.setsid()",
        "    if os.fork() == 0:",
        `        os.execv("/bin/sleep", ["sleep", "${marker}"])`,
        "    os._exit(0)",
        "os.wait()",
        "print('daemonised')",
      ].join("\n");
      const result = await run({ language: "python", code });
      expect(result.stdout).toContain("daemonised");
      expect(await waitUntilGone(marker)).toEqual([]);
    });

    hostileIt("SIGTERM ignored", async () => {
      const code =
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n    time.sleep(0.05)\n";
      const result = await run({ language: "python", code, timeoutMs: KILL_AFTER_MS });
      expect(result.status).toBe("timeout");
      expect(result.durationMs).toBeLessThan(KILL_AFTER_MS + 2_000);
    });

    hostileIt("stdout and stderr closed, then sleep", async () => {
      const code = "import os, time\nprint('bye', flush=True)\nos.close(1)\nos.close(2)\ntime.sleep(10**6)\n";
      const result = await run({ language: "python", code, timeoutMs: KILL_AFTER_MS });
      expect(result.status).toBe("timeout");
      expect(result.stdout).toBe("bye\n");
    });

    hostileIt("invalid UTF-8 output", async () => {
      const code = "import sys\nsys.stdout.buffer.write(b'ok \\xff\\xfe\\xc3 end\\n')\n";
      const result = await run({ language: "python", code });
      expect(result.status).toBe("ok");
      expect(result.stdout).toBe("ok \uFFFD\uFFFD\uFFFD end\n");
    });

    hostileIt("read stdin", async () => {
      const result = await run({
        language: "python",
        code: "import sys\nprint(len(sys.stdin.read()))\n",
        timeoutMs: 5_000,
      });
      expect(result.status).toBe("ok");
      expect(result.stdout).toBe("0\n");
      expect(result.durationMs).toBeLessThan(3_000);
    });

    hostileIt("deep recursion", async () => {
      const result = await run({ language: "python", code: "def down(n):\n    return down(n + 1)\n\ndown(0)\n" });
      expect(result.status).toBe("error");
      expect(result.error).toMatchObject({ type: "RecursionError", line: 2 });
    });

    hostileIt("JS infinite loop", async () => {
      const result = await run({ language: "javascript", code: "for (;;) {}\n", timeoutMs: KILL_AFTER_MS });
      expect(result.status).toBe("timeout");
    });

    hostileIt("JS write outside the work dir", async () => {
      const targets = outsideTargets();
      const code = `const fs = require("fs");\nfor (const target of ${JSON.stringify(targets)}) {\n  try { fs.writeFileSync(target, "pwned"); } catch {}\n}\n`;
      await run({ language: "javascript", code });
      expect(targets.filter((target) => existsSync(target))).toEqual([]);
    });

    hostileIt("JS API key in the environment", async () => {
      const result = await withFakeApiKey(() =>
        run({ language: "javascript", code: "console.log(JSON.stringify(process.env));\n" }),
      );
      expect(result.status).toBe("ok");
      expect(result.stdout).not.toContain(FAKE_API_KEY);
    });

    hostileIt("JS connect to a host listener", async () => {
      await withListener(async (port, connections) => {
        const code = [
          'const net = require("net");',
          `const socket = net.connect(${port}, "127.0.0.1");`,
          'socket.on("connect", () => { console.log("connected"); socket.end("leak"); });',
          'socket.on("error", (error) => console.log("blocked", error.code));',
        ].join("\n");
        const result = await run({ language: "javascript", code });
        expect(result.stdout).toContain("blocked");
        expect(connections()).toBe(0);
      });
    });
  });
}

async function withFakeApiKey<T>(body: () => Promise<T>): Promise<T> {
  const saved = { openai: process.env.OPENAI_API_KEY, selfheal: process.env.SELFHEAL_TEST_API_KEY };
  process.env.OPENAI_API_KEY = FAKE_API_KEY;
  process.env.SELFHEAL_TEST_API_KEY = FAKE_API_KEY;
  try {
    return await body();
  } finally {
    restoreEnv("OPENAI_API_KEY", saved.openai);
    restoreEnv("SELFHEAL_TEST_API_KEY", saved.selfheal);
  }
}

function restoreEnv(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}

async function withListener(body: (port: number, connections: () => number) => Promise<void>): Promise<void> {
  let accepted = 0;
  const server: Server = createServer((socket) => {
    accepted += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  try {
    await body(port, () => accepted);
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** Host pids whose command line contains `marker`. */
export function pidsWithMarker(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const commandLine = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (commandLine.includes(marker)) pids.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return pids;
}

/** Gives the kernel a moment to reap a killed namespace, then returns whatever is still there. */
async function waitUntilGone(marker: string, withinMs = 2_000): Promise<number[]> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const left = pidsWithMarker(marker);
    if (left.length === 0 || Date.now() > deadline) return left;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const PLAIN_PROCESS = "the process backend runs code as the calling user, on the host's file system and network";

/** What the plain process backend cannot contain, as its hostile suite demonstrates. */
export const PROCESS_BACKEND_GAPS: Partial<Record<HostileCase, string>> = {
  "fork bomb": "no per-run process cap: RLIMIT_NPROC counts every process of the user, and root ignores it",
  "write outside the work dir": PLAIN_PROCESS,
  "read the host's home": PLAIN_PROCESS,
  ...(process.getuid?.() === 0 ? { "read /etc/shadow": "running as root, the code can read it" } : {}),
  "read a secret file": PLAIN_PROCESS,
  "connect to a host listener": PLAIN_PROCESS,
  "setsid grandchild": "a new session leaves the process group the timeout kills",
  "double-forked daemon": "a new session leaves the process group the timeout kills",
  "JS write outside the work dir": PLAIN_PROCESS,
  "JS connect to a host listener": PLAIN_PROCESS,
};
