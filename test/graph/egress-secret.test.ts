import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeRunReport } from "../../src/cli/commands/report.js";
import { createAgent, createSandbox, parseSettings, ScriptedChatModel } from "../../src/index.js";
import { openRunStore, type RunStore } from "../../src/store/index.js";
import { bwrapMissing } from "../helpers/capabilities.js";
import { type EgressTestServers, startEgressTestServers, TEST_CSV } from "../helpers/egress-servers.js";
import { fence } from "../helpers/helpers.js";
import { scratchDir } from "../helpers/scratch.js";

/**
 * A header read from selfheal's environment (issue 40) reaches the listed server, and nowhere else:
 * not the program (its environment and files), not the run's state, the checkpoints in the
 * database, nor the run report. Each is searched for the token.
 */
const TOKEN = "selfheal-secret-9c4e1d";
const VARIABLE = "SELFHEAL_TEST_SECRET_HEADER";
const THREAD = "egress-secret";

describe.skipIf(bwrapMissing() !== null)("a secret header of allowHosts", () => {
  let servers: EgressTestServers;
  let store: RunStore;
  const dir = scratchDir("egress-secret");
  const sandbox = createSandbox({ kind: "bwrap", prewarm: false });

  beforeAll(async () => {
    servers = await startEgressTestServers();
    process.env.SELFHEAL_EGRESS_RESOLVE = servers.resolveVariable;
    process.env[VARIABLE] = TOKEN;
    store = await openRunStore({ kind: "sqlite", path: join(dir, "runs.db") });
  });
  afterAll(async () => {
    delete process.env.SELFHEAL_EGRESS_RESOLVE;
    delete process.env[VARIABLE];
    await store.close();
    await sandbox.close();
    await servers.close();
  });

  it("reaches the listed server, and none of the program, the state, the checkpoints or the report", async () => {
    const program = `import os, subprocess, urllib.request
print(urllib.request.urlopen("http://data.test:${servers.httpPort}/x.csv", timeout=20).read().decode(), end="")
print(sorted(os.environ.items()))
print(subprocess.run(["cat", "/proc/self/environ"], capture_output=True).stdout)
for root, _, files in os.walk("/run/selfheal-egress"):
    print(root, sorted(files))
`;
    const agent = createAgent({
      model: new ScriptedChatModel([fence(program)]),
      sandbox,
      checkpointer: store.checkpointer,
    });
    const settings = parseSettings({
      model: "scripted-secret",
      sandbox: "bwrap",
      maxAttempts: 1,
      allowHosts: [{ host: `data.test:${servers.httpPort}`, headers: { Authorization: `Bearer env:${VARIABLE}` } }],
    });
    await store.saveRun({ threadId: THREAD, task: "Print the CSV.", settings, createdAt: new Date().toISOString() });
    const before = servers.seen.length;
    const state = await agent.invoke(
      { task: "Print the CSV." },
      { context: settings, configurable: { thread_id: THREAD } },
    );
    expect(state.status).toBe("passed");
    expect(state.lastRun?.stdout.startsWith(TEST_CSV)).toBe(true);
    expect(servers.seen.slice(before).map((headers) => headers.authorization)).toEqual([`Bearer ${TOKEN}`]);

    expect(JSON.stringify(state)).not.toContain(TOKEN);
    const reportPath = join(dir, "report.html");
    expect(await writeRunReport(store, THREAD, reportPath)).toBe(true);
    expect(readFileSync(reportPath, "utf8")).not.toContain(TOKEN);
    // The database with its write-ahead log: every checkpoint of the run, as bytes.
    const files = readdirSync(dir).filter((name) => name.startsWith("runs.db"));
    expect(files).toContain("runs.db");
    for (const name of files) expect(readFileSync(join(dir, name)).includes(TOKEN)).toBe(false);
  });
});
