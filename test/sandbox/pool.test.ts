import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

import { settingsWithFlags } from "../../src/cli/flag-settings.js";
import { InvalidSettingsError } from "../../src/core/errors.js";
import { processIsRunning, processStartTime } from "../../src/core/process.js";
import { createAgent, createSandbox, parseSettings, SharedSandboxes } from "../../src/index.js";
import { PYTHON_BOOTSTRAP } from "../../src/sandbox/host/bootstrap.js";
import { type ManagedSandbox, SANDBOX_POOL_SIZE } from "../../src/sandbox/index.js";
import { bwrapMissing } from "../helpers/capabilities.js";
import { fence, scriptedModel } from "../helpers/helpers.js";
import { argvOf, eventually, parentOf, uniqueFileLimit } from "../helpers/processes.js";

const PRINT_PID = "import os\nprint(os.getpid())\n";

/**
 * Whether the interpreter still holds its control pipe, fd 3: a warm one waiting for its code does;
 * one that has had its go (and may still be alive a moment after its run returned) has closed it.
 */
function waitsForCode(pid: number): boolean {
  return existsSync(`/proc/${pid}/fd/3`);
}

/**
 * The Python interpreters on this host running selfheal's bootstrap whose arguments include every
 * one of `markers` (a run's limits, as the bootstrap takes them) and that still wait for their code,
 * sorted. Their arguments alone do not tell a waiting interpreter from one that runs a program.
 */
function bootstrapped(markers: readonly string[], parent?: number): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const argv = argvOf(pid);
    // The interpreter itself, not the bwrap or sh around it, whose arguments include its command.
    if (!argv || !/python/.test(argv[0] ?? "") || argv[4] !== PYTHON_BOOTSTRAP) continue;
    if (!markers.every((marker) => argv.includes(marker))) continue;
    if (parent !== undefined && parentOf(pid) !== parent) continue;
    // A run returns on its end report while its interpreter is still alive: only waiting ones count.
    if (!waitsForCode(pid)) continue;
    pids.push(pid);
  }
  return pids.sort((a, b) => a - b);
}

const pidOf = (stdout: string): number => Number(stdout.trim());
/** The kernel's clock ticks per second (USER_HZ), in which /proc/PID/stat gives a start time. */
const CLOCK_TICKS = 100;

describe("the warm pool of the process sandbox", () => {
  const opened: ManagedSandbox[] = [];
  afterAll(() => Promise.all(opened.map((sandbox) => sandbox.close())));
  const open = (poolSize: number) => {
    const { maxFileMb, marker } = uniqueFileLimit();
    const sandbox = createSandbox({ kind: "process", poolSize, limits: { maxFileMb } });
    opened.push(sandbox);
    return { sandbox, waiting: () => bootstrapped([marker]) };
  };

  it("starts the replacement of a taken interpreter while the run executes, when runs come back to back", async () => {
    const { sandbox, waiting } = open(1);
    await sandbox.prewarm(["python"]);
    const flags = mkdtempSync(join(tmpdir(), "selfheal-pool-test-"));
    const flag = join(flags, "go");
    const pidFile = join(flags, "pid");
    try {
      // A run, and the held one the moment it returns: sooner than an interpreter loads.
      await sandbox.run({ language: "python", code: PRINT_PID });
      // The run tells its pid, then holds its interpreter until the flag exists, which the test
      // writes only once another interpreter waits beside it: refilled after the run instead, the
      // replacement would never come in time, and the run would give up and fail.
      const code =
        "import os, time\n" +
        `open(${JSON.stringify(`${pidFile}.part`)}, "w").write(str(os.getpid()))\n` +
        `os.replace(${JSON.stringify(`${pidFile}.part`)}, ${JSON.stringify(pidFile)})\n` +
        `for _ in range(3000):\n    if os.path.exists(${JSON.stringify(flag)}):\n        break\n    time.sleep(0.01)\n` +
        `print(os.getpid(), os.path.exists(${JSON.stringify(flag)}))\n`;
      const running = sandbox.run({ language: "python", code, timeoutMs: 60_000 });
      const held = await eventually(
        () => (existsSync(pidFile) ? Number(readFileSync(pidFile, "utf8")) : null),
        "the run's pid",
      );
      const replacement = await eventually(
        () => waiting().find((pid) => pid !== held) ?? null,
        "a replacement interpreter waiting while the run executes",
      );
      writeFileSync(flag, "");
      const [printed, seen] = (await running).stdout.trim().split(" ");
      expect(seen).toBe("True");
      expect(Number(printed)).toBe(held);
      // The next run, requested after the replacement was seen waiting, runs in it.
      const next = await sandbox.run({ language: "python", code: PRINT_PID });
      expect(pidOf(next.stdout)).toBe(replacement);
    } finally {
      rmSync(flags, { recursive: true, force: true });
    }
  });

  it("starts the replacement once the run ended, when runs come further apart than an interpreter loads", async () => {
    const { sandbox, waiting } = open(1);
    await sandbox.prewarm(["python"]);
    // The program's last act, a second into the run, is to read the kernel's clock; the
    // replacement's start, read from the kernel too, comes after it. Started during the run (once
    // the program had its code), it would come before.
    const code = "import time\ntime.sleep(1)\nprint(open('/proc/uptime').read().split()[0])\n";
    const result = await sandbox.run({ language: "python", code });
    const endedAtTicks = Math.floor(Number(result.stdout.trim()) * CLOCK_TICKS);
    const [replacement] = await eventually(
      () => (waiting().length > 0 ? waiting() : null),
      "a replacement interpreter",
    );
    expect(processStartTime(replacement!)).toBeGreaterThanOrEqual(endedAtTicks);
  });

  it("runs two programs started back to back in interpreters started before either was asked for", async () => {
    const { sandbox, waiting } = open(2);
    await sandbox.prewarm(["python"]);
    const pool = waiting();
    expect(pool).toHaveLength(2);
    const first = await sandbox.run({ language: "python", code: PRINT_PID });
    const second = await sandbox.run({ language: "python", code: PRINT_PID });
    expect([pidOf(first.stdout), pidOf(second.stdout)].sort((a, b) => a - b)).toEqual(pool);
  });

  it("runs two programs at once in the pool's two interpreters, then in the two that replaced them", async () => {
    const { sandbox, waiting } = open(2);
    await sandbox.prewarm(["python"]);
    const pool = waiting();
    expect(pool).toHaveLength(2);
    const both = () =>
      Promise.all([
        sandbox.run({ language: "python", code: PRINT_PID }),
        sandbox.run({ language: "python", code: PRINT_PID }),
      ]).then((results) => results.map((result) => pidOf(result.stdout)).sort((a, b) => a - b));
    expect(await both()).toEqual(pool);
    const refilled = await eventually(() => {
      const now = waiting();
      return now.length === 2 ? now : null;
    }, "the pool refilled to 2");
    expect(refilled.filter((pid) => pool.includes(pid))).toEqual([]);
    expect(await both()).toEqual(refilled);
  });

  it("runs a program with other limits or packages cold, leaving the warm interpreter waiting", async () => {
    const { sandbox, waiting } = open(1);
    await sandbox.prewarm(["python"]);
    const pool = waiting();
    expect(pool).toHaveLength(1);
    const packages = mkdtempSync(join(tmpdir(), "selfheal-pool-packages-"));
    try {
      const otherLimits = await sandbox.run({ language: "python", code: PRINT_PID, limits: { memoryMb: 256 } });
      const withPackages = await sandbox.run({ language: "python", code: PRINT_PID, packagesDir: packages });
      expect(otherLimits.status).toBe("ok");
      expect(withPackages.status).toBe("ok");
      expect(pool).not.toContain(pidOf(otherLimits.stdout));
      expect(pool).not.toContain(pidOf(withPackages.stdout));
      expect(waiting()).toEqual(pool);
      const fitting = await sandbox.run({ language: "python", code: PRINT_PID });
      expect(pidOf(fitting.stdout)).toBe(pool[0]);
    } finally {
      rmSync(packages, { recursive: true, force: true });
    }
  });
});

const noBwrap = bwrapMissing();
const kinds = noBwrap === null ? (["process", "bwrap"] as const) : (["process"] as const);

// The pool of interpreters each started for it; bwrap's forked ones (fork-isolation.test.ts) have
// their server's command line, not the bootstrap's that these tests find interpreters by.
describe.each(kinds)("closing a %s sandbox with a pool", (kind) => {
  it("leaves no pooled interpreter running", async () => {
    const { maxFileMb, marker } = uniqueFileLimit();
    const sandbox = createSandbox({ kind, poolSize: 3, limits: { maxFileMb }, forkServer: false });
    await sandbox.prewarm(["python"]);
    expect(bootstrapped([marker])).toHaveLength(3);
    await sandbox.close();
    // The process backend's interpreters are its own children, reaped before close() returns;
    // bwrap's sit in a pid namespace whose last processes the kernel reaps a moment later.
    if (kind === "process") expect(bootstrapped([marker])).toEqual([]);
    else await eventually(() => (bootstrapped([marker]).length === 0 ? true : null), "no pooled interpreter", 10_000);
  });
});

describe.each(kinds)("a %s sandbox whose warm interpreter dies once taken", (kind) => {
  it("runs the program cold instead, and does not wait for an exit Node has already seen", async () => {
    const { maxFileMb, marker } = uniqueFileLimit();
    const sandbox = createSandbox({ kind, limits: { maxFileMb }, forkServer: false });
    try {
      await sandbox.prewarm(["python"]);
      const [interpreter] = bootstrapped([marker]);
      if (interpreter === undefined) throw new Error("no pooled interpreter found");
      // The pool's child: the interpreter itself, or the sandbox around it.
      let child = interpreter;
      for (let parent = parentOf(child); parent !== null && parent !== process.pid; parent = parentOf(child)) {
        child = parent;
      }
      process.kill(-child, "SIGKILL");
      // Dead to the kernel, unseen by Node: the loop turns no more until the run has taken it.
      while (processIsRunning(child)) {}
      // The input's writes take a few turns of the loop, in which Node sees the exit.
      const inputs = [{ name: "in/data.txt", content: Buffer.from("data") }];
      const result = await sandbox.run({ language: "python", code: PRINT_PID, inputs });
      expect(result).toMatchObject({ status: "ok", stderr: "" });
      expect(pidOf(result.stdout)).not.toBe(interpreter);
    } finally {
      await sandbox.close();
    }
  });
});

describe("the pool size as a setting", () => {
  it("defaults to one interpreter and refuses a size out of its bounds, naming the flag", () => {
    expect(parseSettings({}).sandboxPoolSize).toBe(1);
    expect(settingsWithFlags({}, { sandboxPool: 4 }).sandboxPoolSize).toBe(4);
    expect(() => parseSettings({ sandboxPoolSize: 0 })).toThrow(
      new InvalidSettingsError("sandboxPoolSize must be at least 1"),
    );
    expect(() => settingsWithFlags({}, { sandboxPool: 17 })).toThrow(
      new InvalidSettingsError("--sandbox-pool must be at most 16 (got 17)"),
    );
    expect(SANDBOX_POOL_SIZE).toEqual({ default: 1, min: 1, max: 16 });
    expect(() => createSandbox({ kind: "process", poolSize: 0 })).toThrow(
      new RangeError("sandbox pool size must be a whole number from 1 to 16, got 0"),
    );
  });

  it("reaches the sandbox an agent makes: the run leaves that many interpreters waiting", async () => {
    const agent = createAgent({ model: scriptedModel(fence("print('hello')")) });
    const final = await agent.invoke(
      { task: "Print hello." },
      { context: { sandbox: "process", sandboxPoolSize: 3, maxAttempts: 1 } },
    );
    expect(final.lastRun).toMatchObject({ status: "ok", stdout: "hello\n" });
    // The agent's sandbox is its own, and the only one this test process starts interpreters for.
    const ours = () => bootstrapped([], process.pid);
    try {
      const waiting = await eventually(() => (ours().length >= 3 ? ours() : null), "3 waiting interpreters");
      expect(waiting).toHaveLength(3);
    } finally {
      for (const pid of ours()) process.kill(pid, "SIGKILL");
    }
  });

  it("is one pool for agents that share their sandboxes (a server's, a worker's), closed with them", async () => {
    const sandboxes = new SharedSandboxes();
    const ours = () => bootstrapped([], process.pid);
    try {
      for (const _ of [1, 2]) {
        const agent = createAgent({ model: scriptedModel(fence("print('hello')")), sandboxes });
        const final = await agent.invoke(
          { task: "Print hello." },
          { context: { sandbox: "process", sandboxPoolSize: 2, maxAttempts: 1 } },
        );
        expect(final.lastRun).toMatchObject({ status: "ok", stdout: "hello\n" });
      }
      // Two agents, one sandbox: two interpreters wait, not two for each agent.
      const waiting = await eventually(() => (ours().length >= 2 ? ours() : null), "2 waiting interpreters");
      expect(sandboxes.get("process", 2).kind).toBe("process");
      expect(ours()).toEqual(waiting);
      expect(waiting).toHaveLength(2);
      await sandboxes.close();
      expect(await eventually(() => (ours().length === 0 ? ours() : null), "no interpreter left")).toEqual([]);
    } finally {
      for (const pid of ours()) process.kill(pid, "SIGKILL");
      await sandboxes.close();
    }
  });
});
