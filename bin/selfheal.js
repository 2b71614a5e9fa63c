#!/usr/bin/env node
// The installed package ships no src/ and runs the compiled dist/ with plain Node. In a checkout,
// where src/ is, dist/ runs too when it was built after the last change to src/ (`npm ci` builds it,
// and so does `npm run build`): plain Node starts the CLI several times faster than tsx. Otherwise
// the CLI runs from its TypeScript source through tsx (a dev dependency): no build step to forget,
// and never a stale dist/ left by an earlier build.
import { existsSync } from "node:fs";
import { builtFromSource } from "./built-from-source.js";

const source = new URL("../src/cli/bin.ts", import.meta.url);

async function runSource() {
  const { register } = await import("tsx/esm/api");
  register();
  await import(source.href);
}

if (!existsSync(source)) {
  await import("../dist/cli/bin.js");
} else if (builtFromSource()) {
  // A build replacing dist/ at this very moment: the source is always there.
  await import("../dist/cli/bin.js").catch((error) =>
    error?.code === "ERR_MODULE_NOT_FOUND" ? runSource() : Promise.reject(error),
  );
} else {
  await runSource();
}
