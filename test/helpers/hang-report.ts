import { readFileSync } from "node:fs";
import { statFields } from "../../src/core/process.js";
import { argvOf, childrenOf } from "./processes.js";

/**
 * What a test that timed out left in flight, for the log: a hang on a busy CI machine cannot be
 * replayed, so the report is all there is to read. It lists this worker's process tree (state and
 * kernel wait channel of each process) and the handles Node still holds.
 */
export function hangReport(): string {
  const lines = [`handles in this worker: ${JSON.stringify(countOf(process.getActiveResourcesInfo()))}`];
  const visit = (pid: number, depth: number): void => {
    for (const child of childrenOf(pid)) {
      const argv = (argvOf(child) ?? ["<zombie>"]).join(" ");
      lines.push(
        `${"  ".repeat(depth)}${child} ${statFields(child)?.[0] ?? "gone"} ${wchanOf(child)} ${argv.slice(0, 160)}`,
      );
      visit(child, depth + 1);
    }
  };
  lines.push(`processes under this worker (${process.pid}): pid, state, wait channel, argv`);
  visit(process.pid, 1);
  return lines.join("\n");
}

export function timedOut(errors: readonly { message?: string }[] | undefined): boolean {
  return (errors ?? []).some((error) => /timed out/i.test(error.message ?? ""));
}

function countOf(names: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const name of names) counts[name] = (counts[name] ?? 0) + 1;
  return counts;
}

function wchanOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/wchan`, "utf8") || "-";
  } catch {
    return "-";
  }
}
