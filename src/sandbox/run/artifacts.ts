import { createHash } from "node:crypto";
import { constants, type Dirent } from "node:fs";
import { lstat, mkdir, open, readdir, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";

import { ARTIFACTS_FOLDER, type ArtifactCollection, type ArtifactFile, mediaTypeOf } from "../../core/data-files.js";
import { MIB } from "../limits.js";
import type { ArtifactRequest } from "../types.js";

/** Entries looked at past `maxFiles` before the walk gives up, so a million empty dirs cost little. */
const WALK_SLACK = 1000;

const sizeText = (bytes: number) => (bytes >= MIB ? `${(bytes / MIB).toFixed(1)} MiB` : `${bytes} bytes`);

/**
 * Copies the regular files under `<workDir>/out/` into `<request.into>/out/`, within the request's
 * count and byte limits, and says why anything was left behind. Symlinks are never followed, in
 * `out/` or as `out/` itself: the program may point one anywhere on the host. Call it once the
 * program is dead, so nothing changes under the walk.
 */
export async function collectArtifacts(workDir: string, request: ArtifactRequest): Promise<ArtifactCollection> {
  const collection: ArtifactCollection = { folder: request.into, files: [], problems: [] };
  const root = join(workDir, ARTIFACTS_FOLDER);
  const rootStat = await lstat(root).catch(() => null);
  if (!rootStat) return collection;
  if (!rootStat.isDirectory()) {
    collection.problems.push(`${ARTIFACTS_FOLDER} is not a directory (a symlink or a file); nothing was collected`);
    return collection;
  }
  let totalBytes = 0;
  let skippedForCount = 0;
  let visited = 0;
  const pending = [root];
  while (pending.length > 0) {
    const folder = pending.shift() as string;
    const entries: Dirent[] = await readdir(folder, { withFileTypes: true }).catch(() => []);
    entries.sort((a, b) => a.name.localeCompare(b.name));
    for (const entry of entries) {
      if (++visited > request.maxFiles + WALK_SLACK) {
        collection.problems.push(`${ARTIFACTS_FOLDER}/ holds too many entries; stopped looking after ${visited - 1}`);
        return finish(collection, skippedForCount, request);
      }
      const path = join(folder, entry.name);
      const name = relative(workDir, path);
      if (entry.isDirectory()) pending.push(path);
      else if (entry.isSymbolicLink()) collection.problems.push(`${name} is a symlink; symlinks are not collected`);
      else if (!entry.isFile()) collection.problems.push(`${name} is not a regular file; not collected`);
      else if (collection.files.length >= request.maxFiles) skippedForCount++;
      else {
        const copied = await copyArtifact(path, join(request.into, name), request.maxBytes - totalBytes);
        if ("problem" in copied) collection.problems.push(`${name} ${copied.problem}`);
        else {
          totalBytes += copied.bytes;
          collection.files.push({ name, ...copied });
        }
      }
    }
  }
  return finish(collection, skippedForCount, request);
}

function finish(collection: ArtifactCollection, skippedForCount: number, request: ArtifactRequest) {
  if (skippedForCount > 0) {
    collection.problems.push(
      `too many artifacts: ${collection.files.length + skippedForCount} files under ${ARTIFACTS_FOLDER}/, the limit is ${request.maxFiles}; ${skippedForCount} not collected`,
    );
  }
  return collection;
}

/** Copies one file, opened without following symlinks, unless it is bigger than `room`. */
async function copyArtifact(
  source: string,
  target: string,
  room: number,
): Promise<Omit<ArtifactFile, "name"> | { problem: string }> {
  const handle = await open(source, constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => null);
  if (!handle) return { problem: "could not be opened; not collected" };
  try {
    const { size } = await handle.stat();
    if (size > room) {
      return {
        problem: `is ${sizeText(size)}, over what is left of the artifact limit (${sizeText(room)}); not collected`,
      };
    }
    const content = await handle.readFile();
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, content);
    return {
      bytes: content.length,
      sha256: createHash("sha256").update(content).digest("hex"),
      mediaType: mediaTypeOf(source),
    };
  } finally {
    await handle.close();
  }
}
