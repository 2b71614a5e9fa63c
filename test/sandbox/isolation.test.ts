import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";

import { CGROUP2_SUPER_MAGIC, detectCgroups, ownCgroupPath, setUpCgroups } from "../../src/sandbox/host/cgroups.js";
import { seccompFilter } from "../../src/sandbox/host/seccomp.js";
import { createSandbox, probeBwrap, resolveLimits } from "../../src/sandbox/index.js";
import { bwrapMissing, cgroupsMissing, isRoot, seccompMissing } from "../helpers/capabilities.js";
import { scratchDir } from "../helpers/scratch.js";

// What this machine offers, found by the tests (capabilities.ts), never by the code under test.
const noBwrap = bwrapMissing();
const noCgroups = cgroupsMissing();
const noSeccomp = seccompMissing();
const skipped = (reason: string | null): string => (reason ? ` (skipped: ${reason})` : "");

const scratch = scratchDir("isolation-test");

describe("finding where run cgroups can go", () => {
  const selfCgroup = "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/abc\n2:cpuacct:/\n0::/user.slice/app.scope\n";

  it("reads this process's path in a v1 hierarchy and in v2", () => {
    expect(ownCgroupPath(selfCgroup, "memory")).toBe("/process_api/abc");
    expect(ownCgroupPath(selfCgroup, "pids")).toBe("/");
    expect(ownCgroupPath(selfCgroup, null)).toBe("/user.slice/app.scope");
  });

  it("says why there is no cgroup when the hierarchies are not there", () => {
    // A plain directory is no cgroup v2 (statfs says so), and it holds no v1 memory hierarchy.
    const support = detectCgroups({ root: scratch, selfCgroup, delegated: undefined, pid: process.pid });
    expect(support).toEqual({ version: null, reason: `no cgroup v1 memory hierarchy at ${join(scratch, "memory")}` });
  });
});

describe("a delegated cgroup v2 subtree", () => {
  /** A v2 group as files: what the kernel shows in cgroup.controllers, subtree_control and procs. */
  function fakeGroup(name: string, files: { controllers: string; procs?: string }): string {
    const dir = join(scratch, name, "app.scope");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "cgroup.controllers"), files.controllers);
    writeFileSync(join(dir, "cgroup.subtree_control"), "");
    writeFileSync(join(dir, "cgroup.procs"), files.procs ?? "");
    return join(scratch, name);
  }
  const v2 = (root: string) => ({
    root,
    selfCgroup: "0::/app.scope\n",
    delegated: undefined,
    pid: 4242,
    fsType: CGROUP2_SUPER_MAGIC,
  });

  it("is only read by detection: nothing is enabled and nothing moves until the set-up step", () => {
    const root = fakeGroup("v2-read-only", { controllers: "cpu memory pids", procs: "4242\n" });
    expect(detectCgroups(v2(root))).toEqual({
      version: 2,
      parent: join(root, "app.scope"),
      setup: { enable: ["memory", "pids", "cpu"], leaf: { dir: join(root, "app.scope", "selfheal-host"), pid: 4242 } },
    });
    expect(readFileSync(join(root, "app.scope", "cgroup.subtree_control"), "utf8")).toBe("");
    expect(existsSync(join(root, "app.scope", "selfheal-host"))).toBe(false);
  });

  it("is used with memory, pids and cpu enabled for the runs' groups", () => {
    const root = fakeGroup("v2-empty", { controllers: "cpu memory pids" });
    expect(setUpCgroups(detectCgroups(v2(root)))).toEqual({ version: 2, parent: join(root, "app.scope") });
    expect(readFileSync(join(root, "app.scope", "cgroup.subtree_control"), "utf8")).toBe("+memory +pids +cpu");
  });

  it("first moves selfheal into a leaf when its own group holds processes", () => {
    const root = fakeGroup("v2-busy", { controllers: "memory pids", procs: "4242\n" });
    expect(setUpCgroups(detectCgroups(v2(root)))).toMatchObject({ version: 2 });
    expect(readFileSync(join(root, "app.scope", "selfheal-host", "cgroup.procs"), "utf8")).toBe("4242");
  });

  it("says how to delegate when the memory controller is not there", () => {
    const root = fakeGroup("v2-undelegated", { controllers: "cpu pids" });
    const support = detectCgroups(v2(root));
    expect(support.version).toBeNull();
    expect(support).toMatchObject({ reason: expect.stringContaining("Delegate=yes") });
  });
});

describe("the seccomp filter", () => {
  it.skipIf(noSeccomp !== null)(
    `is built once with libseccomp and then read from its cache${skipped(noSeccomp)}`,
    () => {
      const cacheDir = join(scratch, "cache");
      const first = seccompFilter({ cacheDir });
      expect(first).toMatchObject({ usable: true });
      if (!first.usable) throw new Error("unreachable: usable was asserted above");
      expect(readdirSync(cacheDir)).toEqual([first.path.slice(cacheDir.length + 1)]);
      // A search path with no python3 at all still finds the file it built.
      expect(seccompFilter({ cacheDir, path: join(scratch, "nothing-here") })).toEqual(first);
    },
  );

  it("says which package to install when no python3 can build it", () => {
    mkdirSync(join(scratch, "fake-bin"), { recursive: true });
    const result = seccompFilter({ cacheDir: join(scratch, "empty-cache"), path: join(scratch, "fake-bin") });
    // /usr/bin/python3 is always tried; where it has the binding (capabilities.ts) the filter is built anyway.
    if (noSeccomp === null) expect(result.usable && existsSync(result.path)).toBe(true);
    else
      expect(result).toMatchObject({
        usable: false,
        reason: expect.stringContaining("apt-get install python3-seccomp"),
      });
  });
});

describe.skipIf(noBwrap !== null)(`the bwrap sandbox's whole-run limits${skipped(noBwrap)}`, () => {
  it("says in describe() which limits hold for the whole run and by what", () => {
    const sandbox = createSandbox({ kind: "bwrap", prewarm: false, limits: { memoryMb: 200 } });
    const isolation = sandbox.describe();
    expect(isolation.kind).toBe("bwrap");
    for (const limit of [isolation.memory, isolation.processes, isolation.cpu, isolation.disk, isolation.syscalls]) {
      expect(["run", "process", "none"]).toContain(limit.scope);
      expect(limit.by.length).toBeGreaterThan(0);
    }
    if (noCgroups === null) expect(isolation.memory.by).toContain("200 MiB for the whole run");
    else expect(isolation.notes.join(" ")).toMatch(/no cgroup/);
  });

  it("falls back to per-process limits with one warning when no cgroup can be made", async () => {
    vi.resetModules();
    const { BwrapLauncher } = await import("../../src/sandbox/bwrap/backend.js");
    const probe = probeBwrap();
    expect(probe.usable).toBe(true);
    if (!probe.usable) throw new Error("unreachable: usable was asserted above");
    const warnings: string[] = [];
    const listener = (warning: Error): void => {
      warnings.push(warning.message);
    };
    process.on("warning", listener);
    try {
      const noCgroup = { cgroups: { version: null, reason: "cgroups switched off for this test" } as const };
      const first = new BwrapLauncher(resolveLimits(), probe.host, noCgroup);
      new BwrapLauncher(resolveLimits(), probe.host, noCgroup);
      await new Promise((resolve) => setImmediate(resolve));
      expect(first.describe().memory.scope).toBe("process");
      expect(warnings.filter((message) => message.includes("cgroups switched off for this test"))).toHaveLength(1);
    } finally {
      process.off("warning", listener);
    }
  });

  it.skipIf(noCgroups !== null)(
    `removes the run's cgroups and tmpfs after a run that timed out${skipped(noCgroups)}`,
    async () => {
      const sandbox = createSandbox({ kind: "bwrap", prewarm: false });
      expect(sandbox.describe().memory.scope).toBe("run");
      const before = ourLeftovers();
      const result = await sandbox.run({
        language: "python",
        code: "import os, time\nos.fork()\ntime.sleep(60)\n",
        timeoutMs: 500,
      });
      expect(result.status).toBe("timeout");
      await sandbox.close();
      expect(ourLeftovers().filter((entry) => !before.includes(entry))).toEqual([]);
    },
  );

  // Only root mounts a tmpfs per run (capabilities.ts: isRoot); elsewhere there is nothing to use again.
  it.skipIf(!isRoot)(
    `shows a run nothing of an earlier run's files, though the emptied tmpfs is used again${skipped(isRoot ? null : "not root: no tmpfs per run")}`,
    async () => {
      const sandbox = createSandbox({ kind: "bwrap", prewarm: false });
      try {
        // Every run forked, so every work dir is made in the fork server's runs folder: emptied
        // mounts are kept for runs of the same folder, and a run made before the server ran (in the
        // temp dir) would leave its mount to nobody.
        await sandbox.prewarm([]);
        // Each run prints the device of its /work: the same device is the same tmpfs, used again.
        const write =
          "import os\nopen('/work/left.txt', 'w').write('x')\nopen('/tmp/left.txt', 'w').write('x')\nprint(os.stat('/work').st_dev)\n";
        const look =
          "import os\nprint(os.stat('/work').st_dev, sorted(os.listdir('/work')), sorted(os.listdir('/tmp')))\n";
        for (let round = 0; round < 2; round++) {
          const written = await sandbox.run({ language: "python", code: write });
          expect(written.status).toBe("ok");
          const device = written.stdout.trim();
          // Releases run after the result, so the written mount comes back after a run or two: look
          // until a run gets it, and every run on the way must see nothing of the others.
          let reused = false;
          for (let tries = 0; tries < 10 && !reused; tries++) {
            const [seenDevice, ...listing] = (await sandbox.run({ language: "python", code: look })).stdout
              .trim()
              .split(" ");
            expect(listing.join(" ")).toBe("['main.py'] []");
            reused = seenDevice === device;
          }
          expect(reused).toBe(true);
        }
      } finally {
        await sandbox.close();
      }
    },
  );

  it("runs Python threads, multiprocessing and subprocess, and Node child_process and crypto, under the filter", async () => {
    const sandbox = createSandbox({ kind: "bwrap" });
    try {
      const python = [
        "import multiprocessing, subprocess, threading",
        "thread = threading.Thread(target=print, args=('thread',))",
        "thread.start(); thread.join()",
        "with multiprocessing.Pool(2) as pool:",
        "    print(sum(pool.map(abs, [-1, -2])))",
        "print(subprocess.run(['echo', 'child'], capture_output=True, text=True).stdout.strip())",
      ].join("\n");
      // Twice: the second run takes the interpreter pre-warmed after the first.
      for (let round = 0; round < 2; round++) {
        const result = await sandbox.run({ language: "python", code: python, timeoutMs: 20_000 });
        expect(result.stdout).toBe("thread\n3\nchild\n");
      }
      const node =
        'const { execFileSync } = require("child_process");\nconsole.log(execFileSync("echo", ["child"]).toString().trim(), require("crypto").randomBytes(2).length);\n';
      for (let round = 0; round < 2; round++) {
        const result = await sandbox.run({ language: "javascript", code: node, timeoutMs: 20_000 });
        expect(result.stdout).toBe("child 2\n");
      }
    } finally {
      await sandbox.close();
    }
  });
});

/** Our cgroups and tmpfs mounts on this host, by name. */
function ourLeftovers(): string[] {
  const found: string[] = [];
  for (const hierarchy of ["memory", "pids", "cpuacct"]) {
    const root = join("/sys/fs/cgroup", hierarchy);
    if (!existsSync(root)) continue;
    const walk = (dir: string, depth: number): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        if (!entry.isDirectory()) continue;
        if (entry.name.startsWith(`selfheal-${process.pid}-`)) found.push(join(dir, entry.name));
        else if (depth < 3) walk(join(dir, entry.name), depth + 1);
      }
    };
    walk(root, 0);
  }
  const mounts = existsSync("/proc/self/mounts") ? readFileSync("/proc/self/mounts", "utf8") : "";
  for (const line of mounts.split("\n")) if (line.includes(`selfheal-run-${process.pid}-`)) found.push(line);
  return found;
}
