#!/usr/bin/env node
// In a checkout, where src/ is, the CLI runs from its TypeScript source through tsx (a dev
// dependency): no build step to forget, and never a stale dist/ left by an earlier `npm pack`.
// The installed package ships no src/ and runs the compiled dist/ with plain Node.
import { existsSync } from "node:fs";

const source = new URL("../src/cli/bin.ts", import.meta.url);
if (existsSync(source)) {
  const { register } = await import("tsx/esm/api");
  register();
  await import(source.href);
} else {
  await import("../dist/cli/bin.js");
}
