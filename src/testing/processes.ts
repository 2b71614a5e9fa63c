import { readdirSync, readFileSync } from "node:fs";

/** Host pids whose command line contains `marker`: what a run left behind, where the host can see it. */
export function pidsWithMarker(marker: string): number[] {
  // Every command line contains a short string, and callers kill what this returns.
  if (marker.length < 8) throw new Error(`a marker must be unique, not ${JSON.stringify(marker)}`);
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const commandLine = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (commandLine.includes(marker)) pids.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return pids;
}
