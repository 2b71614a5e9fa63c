import { rm } from "node:fs/promises";
import { dirname } from "node:path";
import type { Execution, KeptArtifacts, Objection } from "../core/state.js";

/**
 * Why an attempt that ran cleanly still fails on its artifacts: a limit that kept a file back, or
 * a file the task expects that the program did not write. Objections, so the fixer reads them.
 */
export function artifactObjections(expected: string[], run: Execution, attempt: number): Objection[] {
  if (!run.ran) return [];
  const collected = new Set(run.artifacts?.files.map((file) => file.name));
  const missing = expected.filter((name) => !collected.has(name));
  const objections: Objection[] = (run.artifacts?.problems ?? []).map((message) => ({
    attempt,
    source: "critic",
    type: "ArtifactLimit",
    message,
  }));
  if (missing.length > 0) {
    objections.push({
      attempt,
      source: "critic",
      type: "MissingArtifact",
      message: `the program did not write ${missing.join(", ")}, which the task expects; write ${missing.length > 1 ? "them" : "it"} under out/`,
    });
  }
  return objections;
}

/**
 * The artifacts to keep after this attempt: its own when it is the best so far (a pass always is),
 * else the ones kept before. The bytes of whichever attempt loses are deleted from disk.
 */
export async function keepBestArtifacts(
  kept: KeptArtifacts | undefined,
  run: Execution,
  attempt: number,
  isBest: boolean,
): Promise<KeptArtifacts | undefined> {
  const current = run.artifacts ? { attempt, folder: run.artifacts.folder, files: run.artifacts.files } : undefined;
  if (!isBest || !current) {
    if (current?.folder && current.folder !== kept?.folder) await rm(current.folder, { recursive: true, force: true });
    return kept;
  }
  // Only this thread's own folders: a fork starts from another thread's kept artifacts, which stay its.
  if (
    kept?.folder &&
    current.folder &&
    kept.folder !== current.folder &&
    dirname(kept.folder) === dirname(current.folder)
  ) {
    await rm(kept.folder, { recursive: true, force: true });
  }
  return current;
}
