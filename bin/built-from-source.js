// Whether dist/ was built from src/ as it is now: shared by bin/selfheal.js, which then runs dist/,
// and the tests that run the package as a checkout's user would.
import { readdirSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The newest change under `dir`: a file edited, added, or removed (which touches its folder). */
function newestChange(dir) {
  let newest = statSync(dir).mtimeMs;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    newest = Math.max(newest, entry.isDirectory() ? newestChange(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** True when dist/ carries the stamp of a build that started after the last change under src/. */
export function builtFromSource() {
  const stamp = statSync(new URL("../dist/.built-from-src", import.meta.url), { throwIfNoEntry: false });
  return stamp !== undefined && newestChange(fileURLToPath(new URL("../src", import.meta.url))) <= stamp.mtimeMs;
}
