import { MemorySaver } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import { StoreUnavailableError } from "../../src/core/errors.js";
import {
  isPostgresOutage,
  isSqliteOutage,
  type StoreWaitEvent,
  StoreWaits,
  waitForStore,
} from "../../src/store/outage.js";
import { PatientCheckpointer } from "../../src/store/patient-checkpointer.js";

const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });

/** An operation that fails with `error` `failures` times, then answers `value`. */
function flaky<T>(failures: number, value: T, error: unknown = refused) {
  let calls = 0;
  return {
    calls: () => calls,
    run: async () => {
      calls += 1;
      if (calls <= failures) throw error;
      return value;
    },
  };
}

function options(events: StoreWaitEvent[], boundMs = 60_000, signal?: AbortSignal) {
  return {
    operation: "saving a checkpoint",
    threadId: "t1",
    boundMs,
    isOutage: isPostgresOutage,
    where: "postgresql://db/x",
    report: (event: StoreWaitEvent) => events.push(event),
    ...(signal ? { signal } : {}),
  };
}

describe("waitForStore", () => {
  it("retries while the database is away, and says so once each way", async () => {
    const events: StoreWaitEvent[] = [];
    const operation = flaky(3, "saved");
    await expect(waitForStore(operation.run, options(events))).resolves.toBe("saved");
    expect(operation.calls()).toBe(4);
    expect(events.map((event) => event.kind)).toEqual(["waiting", "back"]);
    expect(events[0]).toMatchObject({
      threadId: "t1",
      operation: "saving a checkpoint",
      reason: "connect ECONNREFUSED 127.0.0.1:5432",
    });
  });

  it("lets an error that is not an outage through at once, untold", async () => {
    const events: StoreWaitEvent[] = [];
    const duplicate = Object.assign(new Error("duplicate key value"), { code: "23505" });
    const operation = flaky(1, "never", duplicate);
    await expect(waitForStore(operation.run, options(events))).rejects.toBe(duplicate);
    expect(operation.calls()).toBe(1);
    expect(events).toEqual([]);
  });

  it("with a bound of 0 stops at the first outage, as StoreUnavailableError naming the store and the reason", async () => {
    const events: StoreWaitEvent[] = [];
    const operation = flaky(1, "never");
    const error = await waitForStore(operation.run, options(events, 0)).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as StoreUnavailableError).code).toBe("STORE_UNAVAILABLE");
    expect((error as Error).message).toBe(
      "the run store at postgresql://db/x did not answer while saving a checkpoint (connect ECONNREFUSED 127.0.0.1:5432)",
    );
    expect(operation.calls()).toBe(1);
    expect(events.map((event) => event.kind)).toEqual(["waiting", "gave_up"]);
  });

  it("with a bound of 0 still lets the one attempt answer (no retry)", async () => {
    const events: StoreWaitEvent[] = [];
    const slow = () => new Promise<string>((resolve) => setTimeout(() => resolve("read"), 50));
    await expect(waitForStore(slow, options(events, 0))).resolves.toBe("read");
    expect(events).toEqual([]);
  });

  it("gives up on an attempt that never answers once the bound (at least a connection's timeout) has passed", async () => {
    const events: StoreWaitEvent[] = [];
    const error = await waitForStore(() => new Promise<never>(() => undefined), options(events, 300)).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toContain("(no answer yet)");
  });

  it("stops waiting when the run is stopped", async () => {
    const controller = new AbortController();
    const events: StoreWaitEvent[] = [];
    const waiting = waitForStore(flaky(1_000, "never").run, options(events, 60_000, controller.signal));
    controller.abort(new Error("stopped by Ctrl-C"));
    await expect(waiting).rejects.toThrow("stopped by Ctrl-C");
  });
});

describe("StoreWaits", () => {
  it("makes one wait of a thread's checkpoint and writes waiting side by side, and one back when the last gets through", () => {
    const waits = new StoreWaits();
    const told: string[] = [];
    waits.on((event) => told.push(`${event.kind} ${event.threadId}`));
    const waiting = { kind: "waiting", operation: "x", reason: "r", boundMs: 1 } as const;
    waits.report({ ...waiting, threadId: "a" });
    waits.report({ ...waiting, threadId: "a" });
    waits.report({ ...waiting, threadId: "b" });
    waits.report({ kind: "back", threadId: "a", operation: "x", waitedMs: 1 });
    waits.report({ kind: "gave_up", threadId: "b", operation: "x", waitedMs: 1 });
    waits.report({ kind: "back", threadId: "a", operation: "x", waitedMs: 1 });
    expect(told).toEqual(["waiting a", "waiting b", "gave_up b", "back a"]);
  });
});

describe("what counts as the store being away", () => {
  it("in PostgreSQL: refused, reset, shut down, starting up, cut, timed out; not a refused statement", () => {
    for (const error of [
      refused,
      { code: "ECONNRESET" },
      { code: "57P01", message: "terminating connection due to administrator command" },
      { code: "57P03", message: "the database system is starting up" },
      { code: "08006" },
      new Error("Connection terminated unexpectedly"),
      new Error("Connection terminated due to connection timeout"),
      new Error("timeout exceeded when trying to connect"),
      new Error("Client has encountered a connection error and is not queryable"),
      { message: "wrapped", cause: { code: "ECONNREFUSED" } },
    ])
      expect(isPostgresOutage(error), JSON.stringify(error)).toBe(true);
    for (const error of [
      { code: "23505", message: "duplicate key value" },
      { code: "42P01", message: 'relation "x" does not exist' },
      new Error("syntax error"),
      undefined,
    ])
      expect(isPostgresOutage(error), JSON.stringify(error)).toBe(false);
  });

  it("in SQLite: locked, busy, a full disk, an I/O error; not a constraint", () => {
    for (const code of ["SQLITE_BUSY", "SQLITE_BUSY_SNAPSHOT", "SQLITE_LOCKED", "SQLITE_FULL", "SQLITE_IOERR_WRITE"])
      expect(isSqliteOutage({ code }), code).toBe(true);
    for (const code of ["SQLITE_CONSTRAINT", "SQLITE_CORRUPT", "SQLITE_READONLY"])
      expect(isSqliteOutage({ code }), code).toBe(false);
  });
});

describe("PatientCheckpointer", () => {
  it("writes through an outage with the run's own storeWaitSeconds from the context LangGraph passes", async () => {
    const inner = new MemorySaver();
    const put = inner.put.bind(inner);
    let failures = 2;
    inner.put = async (...args) => {
      if (failures-- > 0) throw Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
      return put(...args);
    };
    const waits = new StoreWaits();
    const told: StoreWaitEvent[] = [];
    waits.on((event) => told.push(event));
    const patient = new PatientCheckpointer(inner, { isOutage: isPostgresOutage, where: "db", waits });
    const config = { configurable: { thread_id: "t", checkpoint_ns: "" }, context: { storeWaitSeconds: 60 } };
    const checkpoint = {
      v: 4,
      id: "1ef00000-0000-6000-8000-000000000001",
      ts: new Date(0).toISOString(),
      channel_values: { x: 1 },
      channel_versions: { x: 1 },
      versions_seen: {},
    };
    await patient.put(config, checkpoint, { source: "input", step: -1, parents: {} }, { x: 1 });
    expect((await patient.getTuple(config))?.checkpoint.channel_values).toEqual({ x: 1 });
    expect(told.map((event) => event.kind)).toEqual(["waiting", "back"]);
    expect(told[0]).toMatchObject({ threadId: "t", boundMs: 60_000, reason: "read ECONNRESET" });

    // A run whose storeWaitSeconds is 0 stops at once.
    failures = 1;
    const noWait = { ...config, context: { storeWaitSeconds: 0 } };
    const stopped = await patient
      .put(noWait, checkpoint, { source: "input", step: -1, parents: {} }, {})
      .catch((caught: unknown) => caught);
    expect(stopped).toBeInstanceOf(StoreUnavailableError);
  });
});
