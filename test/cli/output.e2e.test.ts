import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseSettings } from "../../src/index.js";
import { openRunStore } from "../../src/store/index.js";
import { runCli } from "../helpers/cli-helpers.js";
import { scratchDir } from "../helpers/scratch.js";

const RUNS = 600;
/** A pipe takes 64 KiB at a time: the listing must be well past that. */
const PIPE_BUFFER_BYTES = 64 * 1024;

describe("the CLI's output through a pipe", () => {
  it("prints a listing far larger than a pipe's buffer whole before it exits", async () => {
    const db = join(scratchDir("big-listing"), "runs.db");
    const store = await openRunStore({ kind: "sqlite", path: db });
    const settings = parseSettings({});
    for (let index = 0; index < RUNS; index++) {
      await store.saveRun({
        threadId: `thread-${index}`,
        task: `task ${index}: ${"a long description of what the program should do ".repeat(8)}`,
        settings,
        createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, index)).toISOString(),
      });
    }
    await store.close();

    const result = await runCli(["runs", "--db", db, "--json", "--limit", String(RUNS)]);
    expect(result.code).toBe(0);
    expect(result.stdout.length).toBeGreaterThan(4 * PIPE_BUFFER_BYTES);
    const listed = JSON.parse(result.stdout) as Array<{ threadId: string }>;
    expect(listed).toHaveLength(RUNS);
    expect(new Set(listed.map((run) => run.threadId)).size).toBe(RUNS);
  });
});
