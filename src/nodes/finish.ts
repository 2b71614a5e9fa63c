import { rm } from "node:fs/promises";
import { dirname } from "node:path";
import { type HistoryEntry, keepHigherScore } from "../core/ledger.js";
import type { KeptArtifacts } from "../core/state.js";
import type { AgentNode } from "./types.js";

/**
 * The artifact folders a finished run no longer needs: those of attempts whose artifacts were never
 * the kept ones. Any attempt that was kept at some point stays, because a checkpoint of that time
 * names its folder in `artifacts`, and time travel back to it must find the files. Only folders
 * beside the kept one (this thread's) go: a fork's history names its parent's folders too.
 */
export function artifactFoldersToRemove(history: readonly HistoryEntry[], kept: KeptArtifacts | undefined): string[] {
  const threadFolder = kept?.folder ? dirname(kept.folder) : undefined;
  const remove: string[] = [];
  // Replayed through the `artifacts` reducer itself: an attempt it would not have kept was never kept.
  let keptSoFar: { score?: number; folder: string } | undefined;
  for (const entry of history) {
    if (!entry.artifactsFolder || entry.score === undefined) continue;
    const proposed = { score: entry.score, folder: entry.artifactsFolder };
    keptSoFar = keepHigherScore(keptSoFar, proposed);
    if (keptSoFar === proposed) continue;
    if (entry.artifactsFolder !== kept?.folder && dirname(entry.artifactsFolder) === threadFolder) {
      remove.push(entry.artifactsFolder);
    }
  }
  return remove;
}

/**
 * Where every run ends, however it ends: the one place a run changes the disk after its attempts,
 * so no judge deletes what a later checkpoint may still name. It changes no state.
 */
export const finishNode: AgentNode = async (state) => {
  // A round's candidates that were not chosen were never proposed as the kept artifacts.
  const others = state.history.flatMap((entry) => entry.otherFolders ?? []);
  for (const folder of [...artifactFoldersToRemove(state.history, state.artifacts), ...others]) {
    await rm(folder, { recursive: true, force: true });
  }
  return {};
};
