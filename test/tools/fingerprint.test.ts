import { describe, expect, it } from "vitest";
import { createSandbox } from "../../src/index.js";
import { fingerprintError, normalizeErrorMessage } from "../../src/tools/fingerprint.js";

const sandbox = createSandbox({ kind: "process" });

async function fingerprintOf(code: string) {
  const run = await sandbox.run({ language: "python", code });
  if (!run.error) throw new Error(`expected the program to fail: ${run.stderr}`);
  return { error: run.error, fingerprint: fingerprintError(run.error.type, run.error.message) };
}

describe("error fingerprints", () => {
  it("gives the same bug on another line the same fingerprint", async () => {
    const first = await fingerprintOf("d = {}\nprint(d['missing'])");
    const second = await fingerprintOf("import os\n\n\nx = 1\nd = {}\nprint(d['missing'])");
    expect(first.error.line).not.toBe(second.error.line);
    expect(first.fingerprint).toBe(second.fingerprint);
  });

  it("gives another exception another fingerprint", async () => {
    const keyError = await fingerprintOf("d = {}\nprint(d['missing'])");
    const typeError = await fingerprintOf("print(1 + 'a')");
    const otherKey = await fingerprintOf("d = {}\nprint(d['other'])");
    expect(keyError.fingerprint).not.toBe(typeError.fingerprint);
    expect(keyError.fingerprint).not.toBe(otherKey.fingerprint);
  });

  it("ignores memory addresses, object ids and temp paths", async () => {
    const a = await fingerprintOf("class A: pass\nraise ValueError(f'bad {A()}')");
    const b = await fingerprintOf("class A: pass\n\nraise ValueError(f'bad {A()}')");
    expect(a.error.message).toMatch(/0x[0-9a-f]+/);
    expect(a.fingerprint).toBe(b.fingerprint);
    expect(normalizeErrorMessage("open('/tmp/selfheal-abc123/data.txt') failed at line 7")).toBe(
      "open('<tmp>') failed at line ?",
    );
    expect(normalizeErrorMessage('File "/tmp/run-x1/main.py", line 3')).toBe('File "main.py", line ?');
    expect(fingerprintError("OSError", "pid 123456 gone")).toBe(fingerprintError("OSError", "pid 654321 gone"));
  });
});
