// Builds dist/ from src/ (`npm run build`; `npm ci` and `npm install` in a checkout run it through
// `prepare`, as `npm pack` does). tsc writes into a staging folder that then takes dist/'s place, so
// a CLI or test reading dist/ meanwhile never finds it half deleted. The stamp's time is when the
// build started: a source saved during the build makes dist/ stale, and bin/selfheal.js then runs
// the source instead.
import { execFileSync } from "node:child_process";
import { existsSync, renameSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const at = (path) => fileURLToPath(new URL(`../${path}`, import.meta.url));
const [dist, staging, old] = [at("dist"), at("dist.building"), at("dist.old")];
const started = new Date();

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
