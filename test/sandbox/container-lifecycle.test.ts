import { type ChildProcess, spawn } from "node:child_process";
import { randomInt } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { describe, expect, it } from "vitest";
import { pidsWithMarker } from "../../src/testing/processes.js";
import { containerEngineMissing, containersOwnedBy, TEST_CONTAINER_IMAGE } from "../helpers/container-engine.js";
import { scratchDir } from "../helpers/scratch.js";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const missing = containerEngineMissing();

/**
 * A Node process that owns a container sandbox and runs `code` in it: it prints its own descriptors,
 * then `ready` once the program printed its first line, then the run's result as JSON when it ends.
 */
function ownerScript(code: string): string {
  return [
    `import { readdirSync } from "node:fs";`,
    `import { createSandbox } from "./src/sandbox/index.ts";`,
    `process.stdout.write("owner-fds " + readdirSync("/proc/self/fd").join(",") + "\\n");`,
    `const sandbox = createSandbox({ kind: "container", container: { image: ${JSON.stringify(TEST_CONTAINER_IMAGE)} } });`,
    `const result = await sandbox.run({ language: "python", code: ${JSON.stringify(code)}, timeoutMs: 60000 },`,
    `  { onOutput: () => process.stdout.write("ready\\n") });`,
    `process.stdout.write(JSON.stringify(result) + "\\n");`,
    `await sandbox.close();`,
  ].join("\n");
}

/** Starts the owner through bash (dash redirects only descriptors 0-9), so that descriptors it opens reach the owner without close-on-exec. */
function startOwner(code: string, shellRedirections = ""): ChildProcess {
  const node = [process.execPath, "--import", "tsx", "--input-type=module", "-e", ownerScript(code)];
  const quoted = node.map((word) => `'${word.replaceAll("'", "'\\''")}'`).join(" ");
  return spawn("bash", ["-c", `exec ${quoted} ${shellRedirections}`], { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] });
}

function linesOf(child: ChildProcess): AsyncIterable<string> {
  return (async function* () {
    let buffered = "";
    for await (const chunk of child.stdout ?? []) {
      buffered += String(chunk);
      let newline = buffered.indexOf("\n");
      while (newline !== -1) {
        yield buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        newline = buffered.indexOf("\n");
      }
    }
  })();
}

describe.skipIf(missing !== null)(`container runs and their owner${missing ? ` (skipped: ${missing})` : ""}`, () => {
  it("leaves no container and no process once its owner is SIGKILLed mid-run", async () => {
    const marker = `${randomInt(600, 900)}.${randomInt(1_000_000, 9_999_999)}`;
    const owner = startOwner(`import subprocess\nprint("up", flush=True)\nsubprocess.run(["sleep", "${marker}"])\n`);
    const pid = owner.pid ?? 0;
    for await (const line of linesOf(owner)) if (line === "ready") break;
    // The program runs, in a container of this owner.
    expect(pidsWithMarker(marker).length).toBeGreaterThan(0);
    expect(containersOwnedBy(pid).length).toBeGreaterThan(0);

    owner.kill("SIGKILL");
    // Polled until both are gone; the deadline is generous, a loaded machine reaps slowly.
    const left = () => ({ containers: containersOwnedBy(pid), processes: pidsWithMarker(marker) });
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline && (left().containers.length > 0 || left().processes.length > 0)) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(left()).toEqual({ containers: [], processes: [] });
  });

  it("hands the program no descriptor of its owner: /proc/self/fd holds only 0, 1 and 2", async () => {
    const directory = scratchDir("container-fds");
    const secret = join(directory, "secret.txt");
    const writable = join(directory, "writable.txt");
    writeFileSync(secret, "a secret\n");
    writeFileSync(writable, "");
    // The listing's own descriptor is closed by the time it is read back, so it drops out.
    const code = [
      "import os",
      "held = {}",
      "for fd in os.listdir('/proc/self/fd'):",
      "    try:",
      "        held[int(fd)] = os.readlink(f'/proc/self/fd/{fd}')",
      "    except OSError:",
      "        pass",
      "print(sorted(held))",
    ].join("\n");
    const owner = startOwner(code, `100<'${secret}' 101>>'${writable}'`);
    const lines: string[] = [];
    for await (const line of linesOf(owner)) lines.push(line);
    // The owner (and the docker client it starts) does hold both; they stop at the container.
    expect(lines[0]?.split(" ")[1]?.split(",")).toEqual(expect.arrayContaining(["100", "101"]));
    const result = JSON.parse(lines.at(-1) ?? "{}") as { status: string; stdout: string };
    expect(result.status).toBe("ok");
    expect(result.stdout).toBe("[0, 1, 2]\n");
  });
});
