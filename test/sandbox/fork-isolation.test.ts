import { spawn } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { FORK_RUNS_MOUNT, PYTHON_FORK_SERVER } from "../../src/sandbox/fork/server-source.js";
import { createSandbox, type ManagedSandbox } from "../../src/sandbox/index.js";
import type { RunResult } from "../../src/sandbox/types.js";
import { bwrapMissing, cgroupsMissing, isRoot } from "../helpers/capabilities.js";
import { pidsWithMarker } from "../helpers/owner-harness.js";
import { argvOf, eventually, parentOf } from "../helpers/processes.js";

/**
 * Nothing of one forked run reaches the next: each case leaves something behind in a run forked
 * from the fork server and looks for it from the run forked after it. Every run here is checked to
 * be a forked one (the runs folder, covered, is where the server keeps its socket), so a case
 * cannot pass on a cold run by accident.
 */
const noBwrap = bwrapMissing();

/** First line of every program: fails the run unless it was forked (see above). */
const FORKED_CHECK = `import os, sys\nif not os.path.isdir(${JSON.stringify(FORK_RUNS_MOUNT)}) or os.listdir(${JSON.stringify(FORK_RUNS_MOUNT)}):\n    sys.exit("not a forked run")\n`;

describe.skipIf(noBwrap !== null)(`forked runs on bwrap${noBwrap ? ` (skipped: ${noBwrap})` : ""}`, () => {
  let sandbox: ManagedSandbox;

  beforeAll(async () => {
    // No pool: each run finds no interpreter waiting, and gets one forked on demand.
    sandbox = createSandbox({
      kind: "bwrap",
      prewarm: false,
      limits: { timeoutMs: 20_000, memoryMb: 384, maxProcesses: 40 },
    });
    await sandbox.prewarm([]);
  }, 120_000);
  afterAll(async () => {
    await sandbox?.close();
  });

  /** One forked run (FORKED_CHECK fails it if it was not). */
  async function forked(code: string): Promise<RunResult> {
    const result = await sandbox.run({ language: "python", code: `${FORKED_CHECK}${code}` });
    expect(result.stderr).not.toContain("not a forked run");
    return result;
  }

  it("says in describe() that Python runs are forked, and JavaScript runs are not", () => {
    expect(sandbox.describe().start?.forked).toEqual(["python"]);
  });

  it("gives each run what a cold run gets: pid 2 under an init, uid 1000, /work, no capabilities, the seccomp filter, the rlimits, an empty environment", async () => {
    const result = await forked(
      [
        "import resource",
        "status = open('/proc/self/status').read()",
        "field = lambda name: status.split(name + ':')[1].split()[0]",
        "print(os.getpid(), os.getppid(), os.getuid(), os.getcwd(), field('CapEff'), field('CapBnd'), field('NoNewPrivs'), field('Seccomp'))",
        "print(resource.getrlimit(resource.RLIMIT_AS)[0] // 2**20, resource.getrlimit(resource.RLIMIT_NOFILE)[0])",
        "print(sorted(os.environ))",
        "print(sorted(int(fd) for fd in os.listdir('/proc/self/fd')))",
        "print(sorted(name for name in os.listdir('/proc') if name.isdigit()))",
      ].join("\n"),
    );
    expect(result.status).toBe("ok");
    const [ids, limits, environment, fds, pids] = result.stdout.trim().split("\n");
    expect(ids).toBe("2 1 1000 /work 0000000000000000 0000000000000000 1 2");
    expect(limits).toBe("384 256");
    expect(environment).toBe("['HOME', 'LANG', 'PATH', 'PWD']");
    // stdio, and the descriptor os.listdir itself holds.
    expect(fds).toBe("[0, 1, 2, 3]");
    expect(pids).toBe("['1', '2']");
  });

  it("gives the program the recursion headroom of a cold run, whichever of the server's frames it was forked under", async () => {
    const deepest =
      "def deepest(n):\n    try:\n        return deepest(n + 1)\n    except RecursionError:\n        return n\nprint(deepest(0))\n";
    const cold = createSandbox({ kind: "bwrap", prewarm: false, forkServer: false });
    try {
      const alone = await cold.run({ language: "python", code: deepest });
      expect(alone.status).toBe("ok");
      // The first pair is made when the server starts, the later ones after each run's request.
      for (let run = 0; run < 3; run++) expect((await forked(deepest)).stdout).toBe(alone.stdout);
    } finally {
      await cold.close();
    }
  });

  it("leaves no process behind: a daemon that left its session and double-forked is gone for the next run and on the host", async () => {
    const marker = `selfheal-fork-daemon-${process.pid}-${Date.now()}`;
    const first = await forked(
      [
        "if os.fork() == 0:",
        "    os.setsid()",
        "    if os.fork() == 0:",
        `        os.execv("/bin/sh", ["sh", "-c", "sleep 30 # ${marker}"])`,
        "    os._exit(0)",
        "os.wait()",
        "print('left')",
      ].join("\n"),
    );
    expect(first.stdout).toBe("left\n");
    const second = await forked("print(sorted(name for name in os.listdir('/proc') if name.isdigit()))");
    expect(second.stdout).toBe("['1', '2']\n");
    // Killed with the first run's namespace, when its pid 1 exits just after reporting the end.
    await eventually(() => (hostPidsWithMarker(marker).length === 0 ? true : null), "the daemon gone", 10_000);
  });

  it("leaves no module state, builtins or environment behind: patched json, a new module, a changed os, a set variable", async () => {
    const first = await forked(
      [
        "import builtins, json, types",
        "json.dumps = lambda *args, **kwargs: 'patched'",
        "sys.modules['left_behind'] = types.ModuleType('left_behind')",
        "os.left_behind = True",
        "builtins.left_behind = True",
        "os.environ['LEFT_BEHIND'] = '1'",
        "sys.path.insert(0, '/tmp')",
        "print(json.dumps([1]))",
      ].join("\n"),
    );
    expect(first.stdout).toBe("patched\n");
    const second = await forked(
      [
        "import builtins, json",
        "print(json.dumps([1]), 'left_behind' in sys.modules, hasattr(os, 'left_behind'), hasattr(builtins, 'left_behind'), os.environ.get('LEFT_BEHIND'), '/tmp' in sys.path)",
      ].join("\n"),
    );
    expect(second.stdout).toBe("[1] False False False None False\n");
  });

  it("leaves no file behind: not in /work, /tmp, /dev/shm, nor shared memory by name", async () => {
    const first = await forked(
      [
        "from multiprocessing import shared_memory",
        "for path in ('/work/left.txt', '/tmp/left.txt', '/dev/shm/left.txt'):",
        "    open(path, 'w').write('left')",
        "memory = shared_memory.SharedMemory(name='selfheal-left', create=True, size=64)",
        "memory.buf[:4] = b'left'",
        "print(sorted(os.listdir('/work')), sorted(os.listdir('/tmp')), sorted(os.listdir('/dev/shm')))",
      ].join("\n"),
    );
    expect(first.stdout).toBe("['left.txt', 'main.py'] ['left.txt'] ['left.txt', 'selfheal-left']\n");
    const second = await forked(
      "print(sorted(os.listdir('/work')), sorted(os.listdir('/tmp')), sorted(os.listdir('/dev/shm')), os.listdir('/runs'))",
    );
    expect(second.stdout).toBe("['main.py'] [] [] []\n");
  });

  it("leaves no lock, socket or IPC object behind: a held flock, a listening abstract socket, a SysV message queue", async () => {
    const first = await forked(
      [
        "import ctypes, fcntl, socket, time",
        "lock = open('/tmp/lock', 'w')",
        "fcntl.flock(lock, fcntl.LOCK_EX)",
        "listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)",
        "listener.bind('\\0selfheal-left')",
        "listener.listen(1)",
        "libc = ctypes.CDLL(None)",
        "print(libc.msgget(0x5e1f, 0o1666) >= 0)",
        "if os.fork() == 0:",
        "    os.setsid()",
        "    time.sleep(30)",
        "print('held')",
      ].join("\n"),
    );
    expect(first.stdout).toBe("True\nheld\n");
    const second = await forked(
      [
        "import ctypes, socket",
        "client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)",
        "try:",
        "    client.connect('\\0selfheal-left')",
        "    print('reached')",
        "except OSError:",
        "    print('unreached')",
        "print(ctypes.CDLL(None).msgget(0x5e1f, 0) == -1, os.path.exists('/tmp/lock'))",
      ].join("\n"),
    );
    expect(second.stdout).toBe("unreached\nTrue False\n");
  });

  it("cannot reach the server or another run: kill(2) finds no process outside the run, and the runs folder is empty", async () => {
    const first = await forked(
      [
        "import signal",
        "killed = []",
        "for pid in range(3, 400):",
        "    try:",
        "        os.kill(pid, signal.SIGKILL)",
        "        killed.append(pid)",
        "    except OSError:",
        "        pass",
        "print(killed, os.listdir('/runs'))",
      ].join("\n"),
    );
    expect(first.stdout).toBe("[] []\n");
    // The server lives on: the next run is forked too.
    expect((await forked("print('next')")).stdout).toBe("next\n");
  });

  it("makes the next run's processes ahead with nothing of any run: no capability, the seccomp filter, no descriptor but /dev/null and their channel, in no run's cgroup", async () => {
    expect((await forked("print('before the next')")).stdout).toBe("before the next\n");
    const field = (pid: number, name: string) => {
      try {
        return new RegExp(`^${name}:\\s*(.*)$`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
      } catch {
        return undefined; // gone meanwhile
      }
    };
    // The run is over; an earlier run's processes may still be on their way out. The next run's
    // program process, made ahead, reads /dev/null until its run, and is waiting once it has loaded
    // its filter (the last of its steps before the wait).
    const program = await eventually(
      () => ourForkedPrograms().find((pid) => stdinOf(pid) === "/dev/null" && field(pid, "Seccomp") === "2") ?? null,
      "the next run's process, made ahead and waiting",
      10_000,
    );
    const init = parentOf(program) ?? 0;
    expect(["CapEff", "CapBnd", "NoNewPrivs", "Seccomp"].map((name) => field(program, name))).toEqual([
      "0000000000000000",
      "0000000000000000",
      "1",
      "2",
    ]);
    const descriptors = (pid: number) =>
      readdirSync(`/proc/${pid}/fd`).map((fd) => readlinkSync(`/proc/${pid}/fd/${fd}`).replace(/\d+/g, "N"));
    // Pid 1 holds its channels to the server and to the program; the program only its channel.
    expect(descriptors(program).sort()).toEqual(["/dev/null", "/dev/null", "/dev/null", "socket:[N]"]);
    expect(descriptors(init).sort()).toEqual(["/dev/null", "/dev/null", "/dev/null", "socket:[N]", "socket:[N]"]);
    for (const pid of [init, program]) {
      expect(readFileSync(`/proc/${pid}/cgroup`, "utf8")).not.toContain(`selfheal-${process.pid}-`);
    }
  });

  it.skipIf(!isRoot || cgroupsMissing() !== null)(
    "holds the run's cgroup: a fork bomb stops at the run's process cap and the next run forks normally",
    async () => {
      const first = await forked(
        [
          "import time",
          "count = 0",
          "try:",
          "    for _ in range(500):",
          "        if os.fork() == 0:",
          "            time.sleep(30)",
          "            os._exit(0)",
          "        count += 1",
          "except OSError as error:",
          "    print('stopped', error.errno)",
          "print(count < 40)",
        ].join("\n"),
      );
      expect(first.stdout).toBe("stopped 11\nTrue\n");
      const second = await forked("import subprocess\nprint(subprocess.run(['true']).returncode)");
      expect(second.stdout, second.stderr).toBe("0\n");
    },
  );
});

describe.skipIf(noBwrap !== null)(`the fork server on bwrap${noBwrap ? ` (skipped: ${noBwrap})` : ""}`, () => {
  it("is supervised: a run in flight when it dies is killed, the next runs start cold, and a new server forks the ones after", async () => {
    const sandbox = createSandbox({ kind: "bwrap", prewarm: false, limits: { timeoutMs: 20_000 } });
    try {
      await sandbox.prewarm([]);
      const [first, ...others] = ourServers();
      expect(first).toBeDefined();
      expect(others).toEqual([]);
      const inFlight = sandbox.run(
        { language: "python", code: `${FORKED_CHECK}import time\nprint("started", flush=True)\ntime.sleep(30)\n` },
        { onOutput: (_stream, line) => line === "started" && process.kill(first ?? 0, "SIGKILL") },
      );
      const killed = await inFlight;
      expect([killed.status, killed.stdout]).toEqual(["killed", "started\n"]);
      const next = await sandbox.run({ language: "python", code: "print('after')" });
      expect([next.status, next.stdout]).toEqual(["ok", "after\n"]);
      // What was made ahead while the server was gone (the pool's interpreter, the spare work dir
      // behind it) was made for a cold run; runs take those first, and the ones made after fork.
      const forkedAgain: string[] = [];
      for (let run = 0; run < 4 && forkedAgain.length === 0; run++) {
        await sandbox.prewarm([]);
        const result = await sandbox.run({ language: "python", code: `${FORKED_CHECK}print("forked again")` });
        if (result.status === "ok") forkedAgain.push(result.stdout);
        else expect(result.stderr).toBe("not a forked run\n");
      }
      expect(forkedAgain).toEqual(["forked again\n"]);
      const [second, ...more] = ourServers();
      expect(second).toBeDefined();
      expect(second).not.toBe(first);
      expect(more).toEqual([]);
    } finally {
      await sandbox.close();
    }
    expect(ourServers()).toEqual([]);
  });
});

describe.skipIf(noBwrap !== null)(
  `closing a bwrap sandbox with forked runs${noBwrap ? ` (skipped: ${noBwrap})` : ""}`,
  () => {
    it("kills the runs in flight and leaves no server, no forked process and no runs folder", async () => {
      const sandbox = createSandbox({ kind: "bwrap", prewarm: false, limits: { timeoutMs: 30_000 } });
      await sandbox.prewarm([]);
      let started = 0;
      let allStarted: () => void = () => undefined;
      const whenStarted = new Promise<void>((resolve) => {
        allStarted = resolve;
      });
      const onOutput = (_stream: string, line: string) => {
        if (line === "started" && ++started === 3) allStarted();
      };
      const code = `${FORKED_CHECK}import time\nprint("started", flush=True)\ntime.sleep(30)\n`;
      const runs = [1, 2, 3].map(() => sandbox.run({ language: "python", code }, { onOutput }));
      await whenStarted;
      // The three runs' programs (the next run's process, made ahead, reads /dev/null).
      expect(ourForkedPrograms().filter((pid) => stdinOf(pid) !== "/dev/null")).toHaveLength(3);
      expect(ourServers()).toHaveLength(1);
      await sandbox.close();
      expect((await Promise.all(runs)).map((result) => result.status)).toEqual(["killed", "killed", "killed"]);
      await eventually(
        () => (ourForkedPrograms().length === 0 && ourServers().length === 0 ? true : null),
        "no fork server or forked process",
        10_000,
      );
      expect(readFileSync("/proc/self/mounts", "utf8")).not.toContain(`selfheal-forks-${process.pid}-`);
      expect(readdirSync(tmpdir()).filter((name) => name.startsWith(`selfheal-forks-${process.pid}-`))).toEqual([]);
    });
  },
);

describe.skipIf(noBwrap !== null)(
  `a process that never closes its bwrap sandbox${noBwrap ? ` (skipped: ${noBwrap})` : ""}`,
  () => {
    it("is not kept alive by the fork server, which dies with it", async () => {
      const script = [
        `import { createSandbox } from "./src/sandbox/index.ts";`,
        `const sandbox = createSandbox({ kind: "bwrap", prewarm: false });`,
        `await sandbox.prewarm([]);`,
        `const result = await sandbox.run({ language: "python", code: ${JSON.stringify(`${FORKED_CHECK}print(1)`)} });`,
        `process.stdout.write(result.stdout);`,
      ].join("\n");
      const owner = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
        cwd: new URL("../..", import.meta.url).pathname,
        stdio: ["ignore", "pipe", "inherit"],
      });
      let stdout = "";
      owner.stdout.on("data", (chunk) => {
        stdout += String(chunk);
      });
      // Ends on its own, its fork server still running: nothing of the server may hold the event loop.
      const code = await new Promise((resolve) => owner.once("exit", resolve));
      expect([code, stdout]).toEqual([0, "1\n"]);
      await eventually(
        () => (pidsWithMarker(`selfheal-forks-${owner.pid}-`).length === 0 ? true : null),
        "the fork server's end with its owner",
        10_000,
      );
    });
  },
);

/** The programs of this process's servers' runs: each a fork of its run's pid 1, a fork of the server. */
function ourForkedPrograms(): number[] {
  const servers = ourServers();
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      const init = parentOf(pid);
      return init !== null && servers.includes(parentOf(init) ?? 0);
    });
}

/** Where a process's stdin leads, or undefined where it is gone. */
function stdinOf(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/fd/0`);
  } catch {
    return undefined;
  }
}

/** This process's fork servers: the Pythons running the server's source (not their forks, nor the bwraps around them). */
function ourServers(): number[] {
  const isServer = (pid: number | null) => pid !== null && argvOf(pid)?.[4] === PYTHON_FORK_SERVER;
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => isServer(pid) && !isServer(parentOf(pid)) && descendsFrom(pid, process.pid));
}

function descendsFrom(pid: number, ancestor: number): boolean {
  for (let current: number | null = pid; current !== null && current > 1; current = parentOf(current)) {
    if (current === ancestor) return true;
  }
  return false;
}

/** Host processes whose command line holds `marker`. */
function hostPidsWithMarker(marker: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, "utf8").includes(marker)) found.push(Number(name));
    } catch {
      // Gone while we looked.
    }
  }
  return found;
}
