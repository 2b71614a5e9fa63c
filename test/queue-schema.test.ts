import { describe, expect, it } from "vitest";
import { InvalidSettingsError } from "../src/index.js";
import { checkSchemaName, readQueuedRuns, SharedTokenBucket, TaskQueue } from "../src/queue/index.js";

// Never reached: the name is refused before any connection is made.
const url = "postgresql://nobody@127.0.0.1:1/none";
const injected = "public; DROP TABLE job; --";

describe("the queue's schema name, where it enters SQL", () => {
  it("accepts a plain lower-case identifier", () => {
    expect(checkSchemaName("selfheal_queue")).toBe("selfheal_queue");
  });

  it.each([injected, "Upper", "1starts_with_digit", "", "a".repeat(64), 'quo"te'])("refuses %j", (name) => {
    expect(() => checkSchemaName(name)).toThrow(InvalidSettingsError);
  });

  it("is checked by every public way in: TaskQueue.open, readQueuedRuns, SharedTokenBucket.open", async () => {
    const location = { url, schema: injected };
    await expect(TaskQueue.open(location)).rejects.toThrow(/queue schema must be/);
    await expect(readQueuedRuns(location)).rejects.toThrow(/queue schema must be/);
    await expect(SharedTokenBucket.open(url, injected, "b", { perMinute: 1, burst: 1 })).rejects.toThrow(
      /queue schema must be/,
    );
  });
});
