import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli-helpers.js";
import { type EgressTestServers, startEgressTestServers } from "../helpers/egress-servers.js";
import { fence } from "../helpers/helpers.js";
import { type OpenAIStub, startOpenAIStub } from "../helpers/openai-stub.js";
import { scratchDir } from "../helpers/scratch.js";

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
/** Debian's python3 first: the one with python3-pandas and python3-matplotlib (.ci/run installs them). */
const DEBIAN_PATH = `/usr/bin:${process.env.PATH ?? ""}`;

/** A program that downloads the CSV from `host` and charts it into out/chart.png. */
const chartFrom = (host: string) =>
  fence(`import io, urllib.request
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

text = urllib.request.urlopen("http://${host}/x.csv", timeout=20).read().decode()
table = pd.read_csv(io.StringIO(text))
table.plot.bar(x="city", y="people")
plt.savefig("out/chart.png")
print(table["people"].sum())
`);

describe("selfheal run --allow-host: a data task that downloads its CSV", () => {
  let servers: EgressTestServers;
  let stub: OpenAIStub;
  beforeAll(async () => {
    servers = await startEgressTestServers();
    const port = servers.httpPort;
    // The model's first program asks a host that is not listed; the repair must learn that from the run.
    stub = await startOpenAIStub((_, index) => ({
      content: chartFrom(index === 0 ? `other.test:${port}` : `data.test:${port}`),
    }));
  });
  afterAll(async () => {
    await stub.close();
    await servers.close();
  });

  it("is refused the unlisted host, told so in the repair, then charts the listed one's CSV in bwrap", async () => {
    const cwd = scratchDir("cwd");
    const listed = `data.test:${servers.httpPort}`;
    const result = await runCli(
      ["run", `Chart the people per city from http://${listed}/x.csv into out/chart.png.`].concat(
        ["--allow-host", listed, "--expect", "out/chart.png", "--sandbox", "bwrap"],
        ["--artifacts", "charts", "--report", "report.html", "--json", "--model", "stub-model"],
      ),
      { cwd, env: { OPENAI_BASE_URL: stub.url, PATH: DEBIAN_PATH, SELFHEAL_EGRESS_RESOLVE: servers.resolveVariable } },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ status: "passed", attempt: 2 });
    expect(readFileSync(join(cwd, "charts", "chart.png")).subarray(0, 8)).toEqual(PNG_SIGNATURE);

    const prompt = (index: number) => stub.requests[index]?.messages.map((message) => message.content).join("\n") ?? "";
    expect(prompt(0)).toContain(
      `Network: the program may reach these hosts over HTTP and HTTPS, and no others: ${listed}.`,
    );
    expect(prompt(1)).toContain(
      `- the program tried to reach other.test:${servers.httpPort}, refused: other.test is not on the allowlist`,
    );
    const report = readFileSync(join(cwd, "report.html"), "utf8");
    expect(report).toContain("Network (through the egress proxy)");
    expect(report).toContain(
      `<code>other.test:${servers.httpPort}</code> (HTTP): <span class="fail">refused</span>, other.test is not on the allowlist`,
    );
    expect(report).toContain(`<code>${listed}</code> (HTTP): <span class="pass">allowed</span>`);
  }, 180_000);

  it("exits 2 for an --allow-host that is a URL, before any model call", async () => {
    const requestsBefore = stub.requests.length;
    const result = await runCli(["run", "Fetch it.", "--allow-host", "https://api.github.com/"], {
      cwd: scratchDir("cwd"),
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'selfheal: --allow-host "https://api.github.com/": a host name with an optional port, not a URL (write api.github.com, not https://api.github.com/)\n',
    );
    expect(stub.requests.length).toBe(requestsBefore);
  });
});
