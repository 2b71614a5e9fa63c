import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Browser, Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadDataset } from "../../src/benchmark/dataset.js";
import { renderHtmlReport, taskAnchor } from "../../src/benchmark/html-report.js";
import type { BenchmarkReport } from "../../src/benchmark/records.js";
import { runBenchmark } from "../../src/benchmark/run.js";
import { SIMULATED_MODEL_LABEL, SimulatedBenchmarkModel } from "../../src/benchmark/simulated-model.js";
import { createChatModel } from "../../src/index.js";
import { createSandbox } from "../../src/sandbox/index.js";
import { chromiumMissing, launchChromium, pngColours } from "../helpers/browser.js";
import { type OpenAIStub, startOpenAIStub } from "../helpers/openai-stub.js";
import { scratchDir } from "../helpers/scratch.js";

const noChromium = chromiumMissing();

const sandbox = createSandbox({ prewarm: ["python"] });
let report: BenchmarkReport;
/** A run of the real ChatOpenAI client against a local stub that answers with wrong programs. */
let stubReport: BenchmarkReport;
let stub: OpenAIStub | undefined;
let browser: Browser | undefined;
let page: Page;
let stubPage: Page;
/** A run comparing the three strategies at two candidates a round. */
let strategiesReport: BenchmarkReport;
let strategiesPage: Page;
/** Requests the page made to anything but its own file: a self-contained report makes none. */
const outsideRequests: string[] = [];

beforeAll(async () => {
  const tasks = await loadDataset({ taskIds: ["HumanEval/0", "HumanEval/38", "HumanEval/55"] });
  const model = await SimulatedBenchmarkModel.forTasks(tasks, sandbox);
  report = await runBenchmark({
    tasks,
    sandbox,
    models: { model },
    samples: 2,
    dataset: "humaneval",
    modelLabel: { name: "simulated", simulated: true, label: SIMULATED_MODEL_LABEL },
  });
  stub = await startOpenAIStub((request) => {
    const name =
      /Complete the Python function `(\w+)`/.exec(request.messages.map((message) => message.content).join("\n"))?.[1] ??
      "f";
    return { content: `\`\`\`python\ndef ${name}(*args, **kwargs):\n    return None\n\`\`\`` };
  });
  stubReport = await runBenchmark({
    tasks: tasks.slice(0, 2),
    sandbox,
    models: {
      model: createChatModel(
        "stub-model",
        { temperature: 0 },
        { OPENAI_BASE_URL: stub.url, SELFHEAL_MODEL_RETRIES: "0" },
      ),
    },
    samples: 1,
    maxAttempts: 2,
    dataset: "humaneval",
    modelLabel: { name: "stub-model", simulated: false },
  });
  strategiesReport = await runBenchmark({
    tasks: tasks.slice(0, 2),
    sandbox,
    models: { model },
    maxAttempts: 2,
    settings: { candidates: 2 },
    strategies: ["repair", "resample", "mixed"],
    dataset: "humaneval",
    modelLabel: { name: "simulated", simulated: true, label: SIMULATED_MODEL_LABEL },
  });
  if (noChromium !== null) return;
  const dir = scratchDir("bench-html");
  const strategiesPath = join(dir, "strategies.html");
  writeFileSync(strategiesPath, renderHtmlReport(strategiesReport));
  const path = join(dir, "report.html");
  writeFileSync(path, renderHtmlReport(report));
  const stubPath = join(dir, "stub.html");
  writeFileSync(stubPath, renderHtmlReport(stubReport));
  browser = await launchChromium();
  page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 900 });
  await page.setRequestInterception(true);
  page.on("request", (request) => {
    if (!request.url().startsWith("file:")) {
      outsideRequests.push(request.url());
      void request.abort();
    } else {
      void request.continue();
    }
  });
  await page.goto(pathToFileURL(path).href, { waitUntil: "load" });
  stubPage = await browser.newPage();
  await stubPage.setViewport({ width: 1200, height: 900 });
  await stubPage.goto(pathToFileURL(stubPath).href, { waitUntil: "load" });
  strategiesPage = await browser.newPage();
  await strategiesPage.setViewport({ width: 1200, height: 900 });
  await strategiesPage.goto(pathToFileURL(strategiesPath).href, { waitUntil: "load" });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await stub?.close();
  await sandbox.close();
});

/** Distinct colours and non-white pixels of a PNG, counted by the browser itself. */
async function pixelStats(
  png: string,
): Promise<{ inked: number; hasColour: (hex: string) => boolean; colours: string[] }> {
  const colours = await pngColours(page, png);
  const set = new Set(colours);
  return {
    inked: colours.filter((colour) => colour !== "ffffff").length,
    hasColour: (hex) => set.has(hex),
    colours: [...set],
  };
}

describe.skipIf(noChromium !== null)(
  `the HTML report in headless Chromium${noChromium ? ` (skipped: ${noChromium})` : ""}`,
  () => {
    it("renders its three charts from the inlined Chart.js, with no network", async () => {
      expect(outsideRequests).toEqual([]);
      expect(await page.$eval("body", (body) => body.getAttribute("data-charts-rendered"))).toBe("3");
      const charts = await page.evaluate(() =>
        ["chart-attempts", "chart-tokens", "chart-errors"].map((id) => {
          const chart = (
            window as unknown as {
              Chart: {
                getChart(id: string): { data: { datasets: Array<{ label: string; data: number[] }> } } | undefined;
              };
            }
          ).Chart.getChart(id);
          return chart?.data.datasets.map((dataset) => ({ label: dataset.label, data: dataset.data }));
        }),
      );
      expect(charts[0]).toEqual([
        { label: "repair", data: report.curves.byAttempt.repair },
        { label: "resampling", data: report.curves.byAttempt.resampling },
      ]);
      expect(charts[1]?.map((dataset) => dataset.label)).toEqual(["repair", "resampling"]);
      expect(charts[2]?.map((dataset) => dataset.label)).toEqual([
        "failed attempts (run's feedback)",
        "unsolved tasks (hidden tests)",
      ]);
    });

    it("draws the curves in a screenshot: the repair line's colour is on the attempts chart", async () => {
      // Headless Chromium paints only the tab in front; a screenshot of another waits forever.
      await page.bringToFront();
      const shot = await (await page.$("#chart-attempts"))!.screenshot({ encoding: "base64" });
      const stats = await pixelStats(shot as string);
      expect(stats.inked).toBeGreaterThan(2_000);
      // Chart.js draws the line in the dataset's colour, #1f6feb, and the resampling line in #d1242f.
      expect(stats.hasColour("1f6feb")).toBe(true);
      expect(stats.hasColour("d1242f")).toBe(true);
      const bars = await pixelStats(
        (await (await page.$("#chart-errors"))!.screenshot({ encoding: "base64" })) as string,
      );
      expect(bars.hasColour("bf8700")).toBe(true);
    });

    it("links every task in the table to its section and each attempt to its program", async () => {
      const links = await page.$$eval(".tasks a", (anchors) =>
        anchors.map((anchor) => anchor.getAttribute("href")!.slice(1)),
      );
      const targets = await page.evaluate((ids) => ids.map((id) => document.getElementById(id) !== null), links);
      expect(targets.every(Boolean)).toBe(true);
      expect(links).toContain(taskAnchor("HumanEval/0"));
      expect(links).toContain(`${taskAnchor("HumanEval/0")}-attempt-2`);
      const program = await page.$eval(`#${taskAnchor("HumanEval/0")}-attempt-2 pre`, (pre) => pre.textContent);
      expect(program).toContain("def has_close_elements");
    });

    it("carries the simulated model's label", async () => {
      expect(await page.$eval(".banner.simulated", (banner) => banner.textContent)).toMatch(/^SIMULATED MODEL/);
    });

    it("renders the report of a real client against the stub: nothing solved, failures by class drawn", async () => {
      expect(stubReport.solvedFinal).toBe(0);
      expect(await stubPage.$eval("body", (body) => body.getAttribute("data-charts-rendered"))).toBe("3");
      const labels = await stubPage.evaluate(
        () =>
          (
            window as unknown as { Chart: { getChart(id: string): { data: { labels: string[] } } | undefined } }
          ).Chart.getChart("chart-errors")?.data.labels,
      );
      expect(labels).toEqual(expect.arrayContaining(Object.keys(stubReport.failuresByErrorClass)));
      expect(labels?.length).toBeGreaterThan(0);
      await stubPage.bringToFront();
      const bars = await pixelStats(
        (await (await stubPage.$("#chart-errors"))!.screenshot({ encoding: "base64" })) as string,
      );
      expect(bars.hasColour("8250df")).toBe(true);
      expect(await stubPage.$(".banner.simulated")).toBeNull();
    });

    it("draws one solved-vs-tokens curve per strategy compared, each in its own colour", async () => {
      const datasets = await strategiesPage.evaluate(() =>
        (
          window as unknown as {
            Chart: {
              getChart(id: string): { data: { datasets: Array<{ label: string; data: number[] }> } } | undefined;
            };
          }
        ).Chart.getChart("chart-tokens")?.data.datasets.map((dataset) => ({
          label: dataset.label,
          data: dataset.data,
        })),
      );
      const curves = strategiesReport.curves.byTokens.strategies;
      expect(datasets).toEqual([
        { label: "strategy repair, 2 candidate(s)", data: curves?.repair },
        { label: "strategy resample, 2 candidate(s)", data: curves?.resample },
        { label: "strategy mixed, 2 candidate(s)", data: curves?.mixed },
      ]);
      await strategiesPage.bringToFront();
      const shot = await pixelStats(
        (await (await strategiesPage.$("#chart-tokens"))!.screenshot({ encoding: "base64" })) as string,
      );
      // repair #1f6feb, resample #d1242f, mixed #1a7f37 (drawn last, so on top where the curves meet).
      expect(shot.hasColour("1a7f37")).toBe(true);
      expect(shot.hasColour("d1242f")).toBe(true);
    });
  },
);
