import { spawn } from "node:child_process";
import { closeSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import type { RunResult } from "../../src/sandbox/index.js";
import { bwrapMissing, gvisorMissing } from "../helpers/capabilities.js";
import { OWNER, REPO } from "../helpers/owner-harness.js";
import { scratchDir } from "../helpers/scratch.js";

/**
 * Descriptors the host inherited without close-on-exec (from a shell, a supervisor, a library) must
 * not reach the program. From firejail's and nsjail's tests (both close every fd but stdio before
 * the exec) and bubblewrap's own warning that it passes fds through. The host runs in a child
 * process whose fds 100 (a secret, read-only) and 101 (a host file, for appending) are inherited
 * the way a parent shell's `100<secret 101>>file` would leave them: open, without the flag.
 */
const SECRET_FD = 100;
const HOST_FILE_FD = 101;

const PYTHON_PROBE = `
import errno, json, os
out = {}
try:
    out["read"] = os.read(${SECRET_FD}, 200).decode()
except OSError as error:
    out["read"] = errno.errorcode[error.errno]
try:
    os.write(${HOST_FILE_FD}, b"appended from the sandbox\\n")
    out["append"] = "ok"
except OSError as error:
    out["append"] = errno.errorcode[error.errno]
# listdir's own descriptor is closed by the time we look: keep only what is still open.
out["fds"] = sorted(int(name) for name in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{name}"))
print(json.dumps(out))
`;

/** Node opens descriptors of its own (epoll, eventfd, pipes), all close-on-exec; it lists each with its target. */
const NODE_PROBE = `
const fs = require("fs");
const out = {};
try {
  const buffer = Buffer.alloc(200);
  out.read = buffer.subarray(0, fs.readSync(${SECRET_FD}, buffer)).toString();
} catch (error) {
  out.read = error.code;
}
try {
  fs.writeSync(${HOST_FILE_FD}, "appended from the sandbox\\n");
  out.append = "ok";
} catch (error) {
  out.append = error.code;
}
out.fds = [];
for (const name of fs.readdirSync("/proc/self/fd")) {
  try {
    const target = fs.readlinkSync("/proc/self/fd/" + name);
    const flags = parseInt(/flags:\\s*([0-7]+)/.exec(fs.readFileSync("/proc/self/fdinfo/" + name, "utf8"))[1], 8);
    out.fds.push({ fd: Number(name), target, closeOnExec: (flags & 0o2000000) !== 0 });
  } catch {}
}
console.log(JSON.stringify(out));
`;

interface Probe {
  read: string;
  append: string;
  fds: number[] | { fd: number; target: string; closeOnExec: boolean }[];
}

async function runWithInheritedFds(kind: string, language: "python" | "javascript") {
  const dir = scratchDir("descriptors");
  const secretPath = join(dir, "secret.txt");
  const hostPath = join(dir, "host-file.txt");
  const secret = `inherited-secret-${Date.now()}`;
  writeFileSync(secretPath, secret);
  writeFileSync(hostPath, "host file, unchanged\n");
  const secretFd = openSync(secretPath, "r");
  const hostFd = openSync(hostPath, "a");
  try {
    const stdio: ("ignore" | "pipe" | number)[] = ["ignore", "pipe", "pipe"];
    while (stdio.length < SECRET_FD) stdio.push("ignore");
    stdio.push(secretFd, hostFd);
    const code = language === "python" ? PYTHON_PROBE : NODE_PROBE;
    const owner = spawn(
      process.execPath,
      ["--import", "tsx", OWNER, JSON.stringify({ kind, language, code, timeoutMs: 30_000 })],
      {
        cwd: REPO,
        stdio,
      },
    );
    let stdout = "";
    let stderr = "";
    owner.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    owner.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    await new Promise((resolve) => owner.once("exit", resolve));
    const result = JSON.parse(stdout || "null") as RunResult | null;
    if (!result) throw new Error(`the host failed: ${stderr}`);
    return { probe: JSON.parse(result.stdout) as Probe, secret, secretPath, hostPath };
  } finally {
    closeSync(secretFd);
    closeSync(hostFd);
  }
}

const backends = [
  { kind: "bwrap", missing: bwrapMissing() },
  { kind: "process", missing: null },
  { kind: "gvisor", missing: gvisorMissing() },
];

describe("descriptors the host inherited do not reach the program", () => {
  for (const { kind, missing } of backends) {
    const skipped = missing ? ` (skipped: ${missing})` : "";
    it.skipIf(missing !== null)(
      `on ${kind}, Python can neither read fd 100 nor append to fd 101, and sees only 0, 1 and 2${skipped}`,
      async () => {
        const { probe, hostPath } = await runWithInheritedFds(kind, "python");
        expect(probe.read).toBe("EBADF");
        expect(probe.append).toBe("EBADF");
        expect(probe.fds).toEqual([0, 1, 2]);
        expect(readFileSync(hostPath, "utf8")).toBe("host file, unchanged\n");
      },
    );

    it.skipIf(missing !== null)(
      `on ${kind}, JavaScript can neither read fd 100 nor append to fd 101, and holds no inherited fd${skipped}`,
      async () => {
        const { probe, hostPath, secretPath } = await runWithInheritedFds(kind, "javascript");
        expect(probe.read).toBe("EBADF");
        expect(probe.append).toBe("EBADF");
        const fds = probe.fds as { fd: number; target: string; closeOnExec: boolean }[];
        const targets = fds.map((entry) => entry.target);
        expect(targets.filter((target) => target.includes(secretPath) || target.includes(hostPath))).toEqual([]);
        // Past stdio, only what Node opened itself: it opens everything close-on-exec.
        expect(fds.filter((entry) => entry.fd > 2 && !entry.closeOnExec)).toEqual([]);
        expect(readFileSync(hostPath, "utf8")).toBe("host file, unchanged\n");
      },
    );
  }
});
