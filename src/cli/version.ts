import { readFileSync } from "node:fs";

/** The installed package's version; package.json sits two levels up from src/cli/ and from dist/cli/ alike. */
export function packageVersion(): string {
  const manifest: unknown = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
  return typeof manifest === "object" && manifest !== null && "version" in manifest
    ? String(manifest.version)
    : "unknown";
}
