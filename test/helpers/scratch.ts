import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const made: string[] = [];

/**
 * A fresh temporary directory, removed when the test file's tests are over (test/helpers/setup.ts does
 * it), so a test that fails half-way leaves nothing behind either.
 */
export function scratchDir(label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `selfheal-${label}-`));
  made.push(dir);
  return dir;
}

export function removeScratchDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}
