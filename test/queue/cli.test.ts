import { describe, expect, it } from "vitest";
import { describeQueuedStatus } from "../../src/cli/commands/runs.js";
import { parseTaskLines } from "../../src/cli/commands/submit.js";
import { secondsAtLeast } from "../../src/cli/options.js";
import { resolveQueueLocation } from "../../src/cli/queue-session.js";

const job = { jobId: "j", priority: 0, retries: 0 };
const now = Date.parse("2026-01-01T00:00:10Z");

describe("a queued run's status in `selfheal runs`", () => {
  it("names the worker that runs it, how long ago it was heard from, and its last step", () => {
    const running = {
      ...job,
      state: "running" as const,
      worker: "box:42",
      heartbeatAt: "2026-01-01T00:00:07Z",
      step: "executor",
    };
    expect(describeQueuedStatus(running, "unfinished", now)).toBe(
      "running on box:42, heartbeat 3s ago, after executor",
    );
  });

  it("says why a waiting job is waiting again after a failed delivery", () => {
    const retry = { ...job, state: "queued" as const, retries: 1, reason: "job failed by timeout in active state" };
    expect(describeQueuedStatus(retry, "unfinished", now)).toBe(
      "queued (retry 1: job failed by timeout in active state)",
    );
  });

  it("gives a dead-lettered job's reason, and a finished job the run's own status", () => {
    expect(describeQueuedStatus({ ...job, state: "dead-lettered", reason: "sandbox gone" }, "x", now)).toBe(
      "dead-lettered: sandbox gone",
    );
    expect(describeQueuedStatus({ ...job, state: "finished" }, "stuck", now)).toBe("stuck");
  });
});

describe("selfheal submit --file", () => {
  it("reads one task per line with its thread and priority, skipping blank lines", () => {
    const text = `{"task": "a", "thread": "t1", "priority": 5}\n\n{"task": "b", "language": "javascript"}\n`;
    expect(parseTaskLines(text, "tasks.jsonl")).toEqual([
      // The run input's own defaults: no input files, no expected artifacts.
      { task: "a", language: "python", thread: "t1", priority: 5, inputs: {}, expect: [] },
      { task: "b", language: "javascript", inputs: {}, expect: [] },
    ]);
  });

  it("names the file and line of a task it cannot use", () => {
    expect(() => parseTaskLines(`{"task": "a"}\n{"task": ""}\n`, "tasks.jsonl")).toThrow(
      /^tasks\.jsonl:2: .*task must not be empty/,
    );
    expect(() => parseTaskLines("not json\n", "tasks.jsonl")).toThrow("tasks.jsonl:1: not JSON");
  });
});

describe("where the queue lives", () => {
  it("is the run store's PostgreSQL, and refuses a SQLite store", () => {
    expect(resolveQueueLocation({ postgres: "postgresql://h/db" }, {})).toEqual({
      url: "postgresql://h/db",
      schema: "selfheal_queue",
    });
    expect(
      resolveQueueLocation({}, { SELFHEAL_POSTGRES_URL: "postgresql://h/db", SELFHEAL_QUEUE_SCHEMA: "q1" }).schema,
    ).toBe("q1");
    expect(() => resolveQueueLocation({ db: "runs.db" }, {})).toThrow("the queue needs the PostgreSQL store");
    expect(() => resolveQueueLocation({ postgres: "postgresql://h/db", queueSchema: "x; drop" }, {})).toThrow(
      "--queue-schema",
    );
  });
});

describe("selfheal worker's intervals", () => {
  it("refuses to poll faster than pg-boss allows, and a heartbeat of no time at all", () => {
    expect(secondsAtLeast(0.5)("2")).toBe(2);
    expect(() => secondsAtLeast(0.5)("0.1")).toThrow("must be a number of seconds, at least 0.5");
    expect(() => secondsAtLeast(0.1)("0")).toThrow("at least 0.1");
    expect(() => secondsAtLeast(0.1)("soon")).toThrow("at least 0.1");
  });
});
