// Builds dist/ from src/ (`npm run build`; `npm ci` and `npm install` in a checkout run it through
// `prepare`, as `npm pack` does). tsc writes into a staging folder that then takes dist/'s place, so
// a CLI or test reading dist/ meanwhile never finds it half deleted. The stamp's time is when the
// build started: a source saved during the build makes dist/ stale, and bin/selfheal.js then runs
// the source instead. With --when-stale (what `prepare` passes) a dist/ built from the current
// src/ and tsconfig is kept: `npx selfheal` in a clone links the checkout and runs `prepare` on its
// first call, which rebuilt an up-to-date dist/ for 12 s before the CLI answered.
import { execFileSync } from "node:child_process";
import { existsSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { builtFromSource } from "../bin/built-from-source.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const at = (path) => fileURLToPath(new URL(`../${path}`, import.meta.url));
const [dist, staging, old] = [at("dist"), at("dist.building"), at("dist.old")];
const started = new Date();

if (process.argv.includes("--when-stale") && upToDate()) process.exit(0);

function upToDate() {
  const stamp = statSync(`${dist}/.built-from-src`, { throwIfNoEntry: false });
  const configs = ["tsconfig.json", "tsconfig.build.json"].map((file) => statSync(at(file)).mtimeMs);
  return stamp !== undefined && builtFromSource() && Math.max(...configs) <= stamp.mtimeMs;
}

rmSync(staging, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json", "--outDir", staging], {
  cwd: root,
  stdio: "inherit",
});
const stamp = `${staging}/.built-from-src`;
writeFileSync(stamp, `${started.toISOString()}\n`);
utimesSync(stamp, started, started);

rmSync(old, { recursive: true, force: true });
if (existsSync(dist)) renameSync(dist, old);
renameSync(staging, dist);
rmSync(old, { recursive: true, force: true });
