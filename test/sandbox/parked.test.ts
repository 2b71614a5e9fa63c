import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { afterEach, describe, expect, it } from "vitest";

import { processIsRunning } from "../../src/core/process.js";
import { BwrapLauncher } from "../../src/sandbox/bwrap/backend.js";
import { prepareHost } from "../../src/sandbox/host/prepare.js";
import { resolveLimits } from "../../src/sandbox/limits.js";
import type { Reservation } from "../../src/sandbox/run/local-sandbox.js";
import { writeProgramFiles } from "../../src/sandbox/run/local-sandbox.js";
import { collectOptionsFor, collectRun } from "../../src/sandbox/run/run-child.js";
import type { RunRequest, RunResult, SandboxLimits } from "../../src/sandbox/types.js";
import { bwrapMissing, seccompMissing } from "../helpers/capabilities.js";
import { argvOf, childrenOf, eventually, uniqueFileLimit } from "../helpers/processes.js";

const REPO = new URL("../..", import.meta.url).pathname;
const noBwrap = bwrapMissing();
const noSeccomp = noBwrap === null ? seccompMissing() : null;
const skipped = noBwrap ? ` (skipped: ${noBwrap})` : "";

/** The sandboxes `owner` has made ahead and that still wait, blocked in bwrap: its children started with --block-fd. */
function parkedBy(owner: number, marker: string): number[] {
  return childrenOf(owner).filter((pid) => {
    const argv = argvOf(pid);
    return (argv?.includes("--block-fd") && argv.includes(marker)) ?? false;
  });
}

/** Runs `request` cold in `reservation` as LocalSandbox would, and gives the reservation back once the run is dead. */
async function runIn(
  reservation: Reservation,
  request: RunRequest,
  limits: SandboxLimits,
): Promise<{ result: RunResult; pid: number | undefined }> {
  await writeProgramFiles(reservation.workDir, request);
  const program = reservation.spawn(request.language, false, request.packagesDir);
  const exited = new Promise((resolve) => program.child.once("exit", resolve));
  const result = await collectRun(program, collectOptionsFor(request, limits, performance.now(), undefined));
  await exited;
  await reservation.release();
  return { result, pid: program.child.pid };
}

describe.skipIf(noBwrap !== null)(`a bwrap sandbox made ahead of the next run${skipped}`, () => {
  const launchers: BwrapLauncher[] = [];
  const owners: ChildProcess[] = [];
  afterEach(async () => {
    // An owner that hung (the defect the last test looks for) is not left running.
    for (const owner of owners.splice(0)) owner.kill("SIGKILL");
    await Promise.all(launchers.splice(0).map((launcher) => launcher.close()));
  });

  /** A launcher whose runs' arguments carry a marker of their own, so its processes are ours to count. */
  async function openLauncher(): Promise<{ launcher: BwrapLauncher; limits: SandboxLimits; parked: () => number[] }> {
    const host = await prepareHost();
    if (!host.bwrap.usable) throw new Error(`bwrap was usable when the file started: ${host.bwrap.reason}`);
    const { maxFileMb, marker } = uniqueFileLimit();
    const limits = resolveLimits({ maxFileMb });
    const launcher = new BwrapLauncher(limits, host.bwrap.host, { cgroups: host.cgroups });
    launchers.push(launcher);
    return { launcher, limits, parked: () => parkedBy(process.pid, marker) };
  }

  it("starts the next cold Python run in it, with the stdin, files and exit code of that run", async () => {
    const { launcher, limits, parked } = await openLauncher();
    // The first reservation is made on demand; it sets the next one going, which the second awaits.
    const first = await runIn(await launcher.reserve(), { language: "python", code: "print(1)\n" }, limits);
    expect(first.result.stdout).toBe("1\n");
    const second = await launcher.reserve();
    const waiting = await eventually(() => (parked().length === 1 ? parked() : null), "a parked sandbox");
    expect(waiting).toHaveLength(1);

    const { result, pid } = await runIn(
      second,
      {
        language: "python",
        code: "import sys\nprint(sys.stdin.read().upper(), open('data.txt').read())\nsys.exit(3)\n",
        stdin: "from stdin",
        files: { "data.txt": "from a file" },
      },
      limits,
    );
    expect(pid).toBe(waiting[0]);
    expect(result).toMatchObject({ status: "error", exitCode: 3, stdout: "FROM STDIN from a file\n" });
  });

  it("holds a run started in it to the same isolation as a sandbox made for it", async () => {
    const { launcher, limits, parked } = await openLauncher();
    await runIn(await launcher.reserve(), { language: "python", code: "print(1)\n" }, limits);
    const reservation = await launcher.reserve();
    const waiting = await eventually(() => (parked().length === 1 ? parked() : null), "a parked sandbox");
    const code = [
      "import os, socket",
      "print(os.getuid(), socket.gethostname(), sorted(os.listdir('/sys/class/net')) if os.path.exists('/sys/class/net') else '-')",
      "for path in ('/usr/selfheal-probe', '/etc/selfheal-probe'):",
      "    try:",
      "        open(path, 'w')",
      "        print('wrote', path)",
      "    except OSError as error:",
      "        print('refused', path, error.errno)",
      "print(open('/proc/self/status').read().split('Seccomp:')[1].split()[0])",
    ].join("\n");
    const { result, pid } = await runIn(reservation, { language: "python", code }, limits);
    expect(pid).toBe(waiting[0]);
    const lines = result.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^1000 sandbox /);
    expect(lines.slice(1, 3)).toEqual([
      expect.stringMatching(/^refused \/usr\/selfheal-probe (13|30)$/),
      expect.stringMatching(/^refused \/etc\/selfheal-probe (13|30)$/),
    ]);
    // 2: a seccomp filter holds the program, where this host can build one.
    expect(lines[3]).toBe(noSeccomp === null ? "2" : "0");
  });

  it("gives a JavaScript run a sandbox of its own and kills the parked one", async () => {
    const { launcher, limits, parked } = await openLauncher();
    await runIn(await launcher.reserve(), { language: "python", code: "print(1)\n" }, limits);
    const reservation = await launcher.reserve();
    const [waiting] = await eventually(() => (parked().length === 1 ? parked() : null), "a parked sandbox");
    expect(waiting).toBeTypeOf("number");

    const { result, pid } = await runIn(reservation, { language: "javascript", code: "console.log(2 + 2);\n" }, limits);
    expect(result).toMatchObject({ status: "ok", stdout: "4\n" });
    expect(pid).not.toBe(waiting);
    await eventually(
      () => (waiting !== undefined && argvOf(waiting) === null ? true : null),
      "the parked sandbox's end",
    );
  });

  it("starts a sandbox of its own when the parked one was killed from outside", async () => {
    const { launcher, limits, parked } = await openLauncher();
    await runIn(await launcher.reserve(), { language: "python", code: "print(1)\n" }, limits);
    const reservation = await launcher.reserve();
    const [waiting] = await eventually(() => (parked().length === 1 ? parked() : null), "a parked sandbox");
    if (waiting === undefined) throw new Error("no sandbox was parked");
    process.kill(-waiting, "SIGKILL");
    // Dead as the kernel tells it: an empty argv shows only that the exit began, and a run that
    // took the sandbox then would be killed with it (a race no launcher can close).
    await eventually(() => (processIsRunning(waiting) ? null : true), "the killed sandbox's end");

    const { result, pid } = await runIn(reservation, { language: "python", code: "print(6 * 7)\n" }, limits);
    expect(result).toMatchObject({ status: "ok", stdout: "42\n" });
    expect(pid).not.toBe(waiting);
  });

  it("is killed by close(), which leaves no cgroup or mount of it behind", async () => {
    const { launcher, limits, parked } = await openLauncher();
    await runIn(await launcher.reserve(), { language: "python", code: "print(1)\n" }, limits);
    const [waiting] = await eventually(() => (parked().length === 1 ? parked() : null), "a parked sandbox");
    if (waiting === undefined) throw new Error("no sandbox was parked");
    const cgroups = readFileSync(`/proc/${waiting}/cgroup`, "utf8");
    await launcher.close();
    expect(argvOf(waiting)).toBeNull();
    expect(parked()).toEqual([]);
    const mounts = readFileSync("/proc/self/mounts", "utf8");
    expect(mounts).not.toContain(`selfheal-run-${process.pid}-`);
    // The cgroup it was made in, by its path in each hierarchy, is gone.
    for (const line of cgroups.split("\n")) {
      const [, controllers, path] = line.split(":");
      if (!path?.includes(`selfheal-${process.pid}-`)) continue;
      const hierarchy = controllers?.split(",").find((name) => name === "memory" || name === "pids");
      if (hierarchy) expect(() => readFileSync(`/sys/fs/cgroup/${hierarchy}${path}/cgroup.procs`)).toThrow();
    }
  });

  it("does not keep a process that never closes its sandbox alive, and dies with it", async () => {
    const { maxFileMb } = uniqueFileLimit();
    const script = [
      `import { readdirSync, readFileSync } from "node:fs";`,
      `import { createSandbox } from "./src/sandbox/index.ts";`,
      `const sandbox = createSandbox({ kind: "bwrap", prewarm: false, forkServer: false, limits: { maxFileMb: ${maxFileMb} } });`,
      `const result = await sandbox.run({ language: "python", code: "print(1)" });`,
      `const parked = () => readdirSync("/proc").filter((pid) => {`,
      `  try { return readFileSync("/proc/" + pid + "/cmdline", "utf8").includes("--block-fd"); } catch { return false; }`,
      // Another test's parked sandbox may end between the two reads: a process gone is not ours.
      `}).filter((pid) => {`,
      `  try { return readFileSync("/proc/" + pid + "/stat", "utf8").split(") ")[1].split(" ")[1] === String(process.pid); } catch { return false; }`,
      `});`,
      `while (parked().length === 0) await new Promise((resolve) => setTimeout(resolve, 20));`,
      `process.stdout.write(result.stdout.trim() + " " + parked().join(",") + "\\n");`,
    ].join("\n");
    const owner = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: REPO,
      stdio: ["ignore", "pipe", "inherit"],
    });
    owners.push(owner);
    let stdout = "";
    owner.stdout.on("data", (chunk) => {
      stdout += String(chunk);
    });
    // Ends on its own, with the parked sandbox still waiting: nothing of it may hold the event loop.
    const code = await new Promise((resolve) => owner.once("exit", resolve));
    expect(code).toBe(0);
    const [printed, parkedPid] = stdout.trim().split(" ");
    expect(printed).toBe("1");
    expect(Number(parkedPid)).toBeGreaterThan(0);
    await eventually(() => (argvOf(Number(parkedPid)) === null ? true : null), "the orphaned parked sandbox's end");
  });
});
