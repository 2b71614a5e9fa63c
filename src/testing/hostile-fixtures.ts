import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import type { RunResult } from "../sandbox/types.js";
import { appearedWithin, goneWithin } from "./owner.js";
import { pidsWithMarker } from "./processes.js";
import type { TestRunner } from "./runner.js";

/** What a hostile case expects of this backend here: containment, or the escape listed for it. */
export type Expectation = "contained" | "escapes";

/** Where any process of the host may leave files for another: /dev/shm, /tmp, /var/tmp, /run/lock. */
export const SHARED_PLACES = ["/dev/shm", "/tmp", "/var/tmp", "/run/lock"];

export const FAKE_API_KEY = `sk-selfheal-test-${randomBytes(8).toString("hex")}`;

/** Runs `body` with a fake API key in this process's environment, as a real key would be. */
export async function withFakeApiKey<T>(body: () => Promise<T>): Promise<T> {
  const saved = { openai: process.env.OPENAI_API_KEY, selfheal: process.env.SELFHEAL_TEST_API_KEY };
  process.env.OPENAI_API_KEY = FAKE_API_KEY;
  process.env.SELFHEAL_TEST_API_KEY = FAKE_API_KEY;
  try {
    return await body();
  } finally {
    restoreEnv("OPENAI_API_KEY", saved.openai);
    restoreEnv("SELFHEAL_TEST_API_KEY", saved.selfheal);
  }
}

function restoreEnv(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}

/** Runs `body` with a listener on 127.0.0.1 that counts the connections it accepts. */
export async function withListener(body: (port: number, connections: () => number) => Promise<void>): Promise<void> {
  let accepted = 0;
  const server: Server = createServer((socket) => {
    accepted += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  try {
    await body(port, () => accepted);
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/**
 * Gives the kernel time to reap a killed namespace, then returns whatever is still there. The
 * deadline is generous: on a loaded machine reaping is slow, and the case is about what is left, not when.
 */
export function waitUntilGone(marker: string): Promise<number[]> {
  return goneWithin(10_000, () => pidsWithMarker(marker));
}

/** The program's processes are gone after its run, or (escaping) one still sleeps on the host. */
export async function expectGone(expect: TestRunner["expect"], marker: string, expected: Expectation): Promise<void> {
  if (expected === "escapes") expect(await appearedWithin(10_000, () => pidsWithMarker(marker))).not.toEqual([]);
  else expect(await waitUntilGone(marker)).toEqual([]);
}

/** No target outside the work dir was written, or (escaping) the one in the host's temp dir was. */
export function expectWritten(expect: TestRunner["expect"], targets: string[], expected: Expectation): void {
  const written = targets.filter((target) => existsSync(target));
  if (expected === "escapes") expect(written).toContain(targets.find((target) => target.startsWith(tmpdir())));
  else expect(written).toEqual([]);
}

/** The program was refused the host's listener, or (escaping) it connected and the listener saw it. */
export async function expectConnection(
  expect: TestRunner["expect"],
  result: RunResult,
  connections: () => number,
  expected: Expectation,
): Promise<void> {
  if (expected === "contained") {
    expect(result.stdout).toContain("blocked");
    expect(connections()).toBe(0);
    return;
  }
  expect(result.stdout).toContain("connected");
  // The accept may reach this event loop a little after the program ended.
  const deadline = Date.now() + 10_000;
  while (connections() === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  expect(connections()).toBe(1);
}
