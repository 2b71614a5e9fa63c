import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { afterAll, describe, expect, it } from "vitest";
import { buildContainerCommand } from "../../src/sandbox/container/command.js";
import { encodeTar } from "../../src/sandbox/container/tar.js";
import { cgroupCpuReader } from "../../src/sandbox/host/cgroups.js";
import { findOnPath } from "../../src/sandbox/host/interpreters.js";
import { createSandbox, DEFAULT_LIMITS } from "../../src/sandbox/index.js";
import { diskFillProgram } from "../../src/testing/hostile-programs.js";
import { containerEngineMissing, containersOwnedBy, TEST_CONTAINER_IMAGE } from "../helpers/container-engine.js";
import { scratchDir } from "../helpers/scratch.js";

/** The value that follows `flag` in an argv, e.g. `--memory` -> `512m`. */
function flagValue(argv: string[], flag: string): string | undefined {
  const index = argv.indexOf(flag);
  return index === -1 ? undefined : argv[index + 1];
}

describe("the container command", () => {
  const command = buildContainerCommand({
    engine: "docker",
    image: "python:3.12-slim",
    language: "python",
    limits: DEFAULT_LIMITS,
    name: "selfheal-test",
    owner: "1234-abc",
    seccompProfile: "/cache/seccomp-profile.json",
  });

  it("runs a named container reading the program from stdin, kept until the backend inspects it", () => {
    expect(command.slice(0, 3)).toEqual(["docker", "run", "-i"]);
    expect(command).not.toContain("--rm");
    expect(flagValue(command, "--name")).toBe("selfheal-test");
  });

  it("labels the container with its owner, for the reaper", () => {
    expect(command).toContain("selfheal.owner=1234-abc");
    expect(command).toContain("selfheal.sandbox=1");
  });

  it("cuts the network and drops every capability", () => {
    expect(flagValue(command, "--network")).toBe("none");
    expect(flagValue(command, "--cap-drop")).toBe("ALL");
    expect(command).toContain("no-new-privileges");
    expect(command).toContain("seccomp=/cache/seccomp-profile.json");
    expect(flagValue(command, "--user")).toBe("65534:65534");
  });

  it("applies the memory, process, CPU and file limits", () => {
    expect(flagValue(command, "--memory")).toBe("512m");
    expect(flagValue(command, "--memory-swap")).toBe("512m");
    expect(flagValue(command, "--pids-limit")).toBe("64");
    expect(command).toContain("cpu=10:11");
    expect(command).toContain(`fsize=${16 * 1024 * 1024}:${16 * 1024 * 1024}`);
  });

  it("mounts the image read-only with a tmpfs work dir it enters with cd, not --workdir (moby#39466)", () => {
    expect(command).toContain("--read-only");
    expect(flagValue(command, "--tmpfs")).toMatch(/^\/work:rw,/);
    expect(command).not.toContain("--workdir");
  });

  it("runs the code as `python3 -I -u main.py` after unpacking it", () => {
    expect(command.at(-4)).toBe("python:3.12-slim");
    expect(command.at(-1)).toMatch(/^cd \/work && tar -x && .* exec python3 -I -u main\.py$/);
  });

  it("caps the Node heap for JavaScript and can use podman", () => {
    const node = buildContainerCommand({
      engine: "podman",
      image: "node:20-slim",
      language: "javascript",
      limits: DEFAULT_LIMITS,
      name: "n",
      owner: "o",
      seccompProfile: null,
    });
    expect(node[0]).toBe("podman");
    expect(node.some((flag) => flag.startsWith("seccomp="))).toBe(false);
    expect(node.at(-1)).toMatch(/exec node --max-old-space-size=512 main\.js$/);
  });

  it("binds a host folder at /work/out when out/ is collected, and gives /work, /tmp and out/ a third of the disk each", () => {
    expect(command.some((flag) => flag.startsWith("type=bind"))).toBe(false);
    expect(flagValue(command, "--tmpfs")).toContain("size=32m,nr_inodes=2048,");
    const collecting = buildContainerCommand({
      engine: "docker",
      image: "python:3.12-slim",
      language: "python",
      limits: { ...DEFAULT_LIMITS, maxDiskMb: 63 },
      name: "n",
      owner: "o",
      seccompProfile: null,
      artifactsFolder: "/tmp/selfheal-run-1-x/work/out",
    });
    expect(flagValue(collecting, "--mount")).toBe("type=bind,src=/tmp/selfheal-run-1-x/work/out,dst=/work/out");
    expect(flagValue(collecting, "--tmpfs")).toContain("size=21m,nr_inodes=1365,");
  });

  it("packs files into a tar archive that tar can unpack", () => {
    const directory = mkdtempSync(join(tmpdir(), "selfheal-tar-test-"));
    try {
      const archive = join(directory, "files.tar");
      writeFileSync(archive, encodeTar({ "main.py": "print('héllo')\n", "data/in.txt": "42\n" }));
      execFileSync("tar", ["-x", "-C", directory, "-f", archive]);
      expect(readFileSync(join(directory, "main.py"), "utf8")).toBe("print('héllo')\n");
      expect(readFileSync(join(directory, "data/in.txt"), "utf8")).toBe("42\n");
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});

describe("the container backend's CPU budget", () => {
  it("reads no cgroup for a pid whose group does not name the container (a remote engine's pid)", () => {
    expect(cgroupCpuReader(process.pid, "0123456789abcdef")).toBeNull();
  });

  it("says artifacts under out/ are not collected when the engine is on another machine", () => {
    const saved = process.env.DOCKER_HOST;
    process.env.DOCKER_HOST = "tcp://build-farm.example:2376";
    try {
      const notes = createSandbox({ kind: "container", prewarm: false }).describe().notes.join("\n");
      expect(notes).toMatch(/out\/ is not collected/);
    } finally {
      if (saved === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = saved;
    }
  });

  it("says CPU holds per process only when the engine is on another machine", () => {
    const saved = process.env.DOCKER_HOST;
    process.env.DOCKER_HOST = "tcp://build-farm.example:2376";
    try {
      expect(createSandbox({ kind: "container", prewarm: false }).describe().cpu.scope).toBe("process");
    } finally {
      if (saved === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = saved;
    }
    if (process.platform === "linux" && saved === undefined) {
      expect(createSandbox({ kind: "container", prewarm: false }).describe().cpu.scope).toBe("run");
    }
  });
});

describe("the container backend without a reachable engine", () => {
  it("returns unavailable with docker's own message", async () => {
    // An engine that is not there, even where docker runs: the CLI follows DOCKER_HOST.
    const saved = process.env.DOCKER_HOST;
    process.env.DOCKER_HOST = "unix:///nonexistent/selfheal-docker.sock";
    try {
      const sandbox = createSandbox({ kind: "container" });
      const result = await sandbox.run({ language: "python", code: "print(1)" });
      await sandbox.close();
      expect(sandbox.kind).toBe("container");
      expect(result.status).toBe("unavailable");
      expect(result.stderr.trim().length).toBeGreaterThan(0);
      if (findOnPath("docker")) expect(result.stderr).toMatch(/docker/i);
    } finally {
      if (saved === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = saved;
    }
  });

  const podman = findOnPath("podman");
  it.skipIf(podman !== null)(
    `returns unavailable when the engine CLI is not installed${podman ? ` (skipped: podman is installed at ${podman})` : ""}`,
    async () => {
      const sandbox = createSandbox({ kind: "container", container: { command: "podman" } });
      const result = await sandbox.run({ language: "javascript", code: "console.log(1)" });
      expect(result.status).toBe("unavailable");
    },
  );
});

const engineMissing = containerEngineMissing();

describe.skipIf(engineMissing !== null)(
  `the container backend on a real engine${engineMissing ? ` (skipped: ${engineMissing})` : ""}`,
  () => {
    const ours = (): string[] => containersOwnedBy(process.pid);

    it("runs both languages in $SELFHEAL_CONTAINER_IMAGE when no image is given", async () => {
      const saved = process.env.SELFHEAL_CONTAINER_IMAGE;
      process.env.SELFHEAL_CONTAINER_IMAGE = TEST_CONTAINER_IMAGE;
      const sandbox = createSandbox({ kind: "container", prewarm: false });
      try {
        const python = await sandbox.run({ language: "python", code: "print(6 * 7)" });
        const javascript = await sandbox.run({ language: "javascript", code: "console.log(6 * 7)" });
        expect([python.status, python.stdout, javascript.status, javascript.stdout]).toEqual([
          "ok",
          "42\n",
          "ok",
          "42\n",
        ]);
      } finally {
        await sandbox.close();
        if (saved === undefined) delete process.env.SELFHEAL_CONTAINER_IMAGE;
        else process.env.SELFHEAL_CONTAINER_IMAGE = saved;
      }
    });

    it("gives a container started for its run the wall clock once the engine runs it, not while the engine starts it", async () => {
      // An engine that takes 3 s to start each container (a busy one took over 10 s in CI); the
      // program itself needs a small part of its 2 s. Before the clock waited, this run timed out.
      const slowEngine = scratchDir("slow-engine");
      const real = findOnPath("docker");
      writeFileSync(join(slowEngine, "docker"), `#!/bin/sh\nif [ "$1" = run ]; then sleep 3; fi\nexec ${real} "$@"\n`, {
        mode: 0o755,
      });
      const savedPath = process.env.PATH;
      process.env.PATH = `${slowEngine}:${savedPath}`;
      const sandbox = createSandbox({ kind: "container", prewarm: false, container: { image: TEST_CONTAINER_IMAGE } });
      try {
        const result = await sandbox.run({ language: "python", code: "print('in time')", timeoutMs: 2_000 });
        expect([result.status, result.stdout]).toEqual(["ok", "in time\n"]);
        expect(result.durationMs).toBeGreaterThan(3_000);
      } finally {
        await sandbox.close();
        process.env.PATH = savedPath;
      }
      expect(ours()).toEqual([]);
    });

    it("keeps one container waiting for the next program, and close() removes every container of the run", async () => {
      const sandbox = createSandbox({ kind: "container", container: { image: TEST_CONTAINER_IMAGE } });
      const first = await sandbox.run({ language: "python", code: "print('first')" });
      await sandbox.prewarm(["python"]);
      // The first run's container may still be on its way out; the waiting one runs.
      expect(containersOwnedBy(process.pid, "running")).toHaveLength(1);
      const second = await sandbox.run({
        language: "python",
        code: "import sys\nprint(sys.stdin.read())",
        stdin: "2nd",
      });
      await sandbox.close();
      expect([first.stdout, second.stdout]).toEqual(["first\n", "2nd\n"]);
      expect(ours()).toEqual([]);
    });

    describe("artifacts under out/", () => {
      // 12 MiB of disk: /work, /tmp and out/ get 4 MiB each.
      const sandbox = createSandbox({
        kind: "container",
        prewarm: false,
        limits: { maxDiskMb: 12 },
        container: { image: TEST_CONTAINER_IMAGE },
      });
      afterAll(() => sandbox.close());
      const run = (code: string, into = scratchDir("artifacts"), timeoutMs?: number) =>
        sandbox.run({
          language: "python",
          code,
          collectArtifacts: { into, maxFiles: 4, maxBytes: 1_000_000 },
          ...(timeoutMs ? { timeoutMs } : {}),
        });
      const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

      it("collects the files the program writes under out/, with their size and sha256, and follows no symlink", async () => {
        const into = scratchDir("artifacts");
        const result = await run(
          [
            "import os",
            "open('out/a.txt', 'w').write('hello')",
            "os.makedirs('out/sub')",
            "open('out/sub/b.bin', 'wb').write(bytes(range(256)) * 4)",
            "os.symlink('/etc/passwd', 'out/link')",
          ].join("\n"),
          into,
        );
        expect(result.status).toBe("ok");
        const b = Buffer.from(Array.from({ length: 1024 }, (_, index) => index % 256));
        expect(result.artifacts?.files.map(({ name, bytes, sha256 }) => ({ name, bytes, sha256 }))).toEqual([
          { name: "out/a.txt", bytes: 5, sha256: sha256(Buffer.from("hello")) },
          { name: "out/sub/b.bin", bytes: 1024, sha256: sha256(b) },
        ]);
        expect(readFileSync(join(into, "out/sub/b.bin"))).toEqual(b);
        expect(result.artifacts?.problems).toEqual([expect.stringMatching(/out\/link is a symlink/)]);
        expect(existsSync(join(into, "out/link"))).toBe(false);
      });

      it("stops a program that fills out/ with ENOSPC at the size of its tmpfs", async () => {
        const code = diskFillProgram("out/", 64);
        const result = await run(code);
        const [written, failure] = result.stdout.trim().split(" ");
        expect(failure).toBe("ENOSPC");
        expect(Number(written)).toBeLessThanOrEqual(4);
      });

      it("collects out/ after a timeout too, and unmounts every tmpfs it made, a waiting container's too, once closed", async () => {
        // Pre-warmed, so that the container's start takes nothing from the 3 s, and another one waits
        // (with its own out/ tmpfs) when close() is called.
        const timed = createSandbox({ kind: "container", container: { image: TEST_CONTAINER_IMAGE } });
        await timed.prewarm(["python"]);
        const result = await timed.run({
          language: "python",
          code: "import time\nopen('out/early.txt', 'w').write('before the timeout')\ntime.sleep(60)",
          timeoutMs: 3_000,
          collectArtifacts: { into: scratchDir("artifacts"), maxFiles: 4, maxBytes: 1000 },
        });
        await timed.close();
        await sandbox.close();
        expect(result.status).toBe("timeout");
        expect(result.artifacts?.files.map((file) => file.name)).toEqual(["out/early.txt"]);
        const ourMounts = readFileSync("/proc/self/mounts", "utf8")
          .split("\n")
          .filter((line) => line.includes(`selfheal-run-${process.pid}-`));
        expect(ourMounts).toEqual([]);
      });
    });
  },
);
