import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Browser, Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { traceThread, writeRunReport } from "../../src/cli/commands/report.js";
import { createAgent, createSandbox, parseSettings, ScriptedChatModel } from "../../src/index.js";
import { htmlPage, REPORT_LIMITS, renderRunReport } from "../../src/report/index.js";
import { openRunStore, type RunStore } from "../../src/store/index.js";
import { chromiumMissing, launchChromium, pngColours } from "../helpers/browser.js";
import { fence } from "../helpers/helpers.js";
import { scratchDir } from "../helpers/scratch.js";

const noChromium = chromiumMissing();

const sandbox = createSandbox({ prewarm: ["python"] });
const dir = scratchDir("run-report");
let store: RunStore;

// Everything hostile a model or a program can put in a report: each would set a window flag if it ran.
const TASK =
  'Print a greeting. </script><img src=x onerror="window.__fromTask = 1"> <!-- <script>window.__fromTask = 2</script>';
const PRINTED = "<script>window.__fromOutput = 1</script>";
const hostile = (body: string) =>
  fence(`# </script><script>window.__fromCode = 1</script>\nprint(${JSON.stringify(PRINTED)})\n${body}`);

/**
 * Four attempts and every author: the draft and the fixer's repair fail with the same KeyError
 * (a repeat), which earns a fresh rewrite; the rewrite fails with a new error; the fixer's repair passes.
 */
const REPLIES = [
  hostile('config = {}\nprint(config["greeting"])'),
  hostile('config = {"name": "x"}\nprint(config["greeting"])'),
  hostile('greeting = "hello"\nassert greeting == "hi", "wrong greeting"'),
  hostile('greeting = "hi"\nassert greeting == "hi", "wrong greeting"\nprint(greeting)'),
];
const THREAD = "report-e2e";
const reportPath = join(dir, "report.html");

let browser: Browser | undefined;
let page: Page;
const outsideRequests: string[] = [];
const pageErrors: string[] = [];

beforeAll(async () => {
  store = await openRunStore({ kind: "sqlite", path: join(dir, "runs.db") });
  const agent = createAgent({ model: new ScriptedChatModel(REPLIES), sandbox, checkpointer: store.checkpointer });
  await store.saveRun({
    threadId: THREAD,
    task: TASK,
    settings: parseSettings({ model: "scripted-report" }),
    createdAt: new Date().toISOString(),
  });
  await agent.invoke(
    { task: TASK },
    { context: parseSettings({ maxAttempts: 6, model: "scripted-report" }), configurable: { thread_id: THREAD } },
  );
  expect(await writeRunReport(store, THREAD, reportPath)).toBe(true);
  if (noChromium !== null) return;
  browser = await launchChromium();
  page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 900 });
  await page.setRequestInterception(true);
  page.on("request", (request) => {
    // The page itself is the one request allowed; an <img src=x> would ask for file:///.../x.
    if (request.url() !== pathToFileURL(reportPath).href) {
      outsideRequests.push(request.url());
      void request.abort();
    } else {
      void request.continue();
    }
  });
  page.on("pageerror", (error) => pageErrors.push(String(error)));
  await page.goto(pathToFileURL(reportPath).href, { waitUntil: "load" });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await store?.close();
  await sandbox.close();
});

/** Distinct colours and non-white pixels of a PNG, counted by the browser itself. */
async function pixelStats(png: string): Promise<{ inked: number; colours: Set<string> }> {
  const colours = await pngColours(page, png);
  return { inked: colours.filter((colour) => colour !== "ffffff").length, colours: new Set(colours) };
}

describe.skipIf(noChromium !== null)(
  `a run's HTML report in headless Chromium${noChromium ? ` (skipped: ${noChromium})` : ""}`,
  () => {
    it("has one timeline row per attempt, with its author, and marks the repeated error", async () => {
      const rows = await page.$$eval("#timeline tr.attempt-row", (trs) =>
        trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent?.trim() ?? "")),
      );
      expect(rows.map((row) => row[0])).toEqual(["1", "2", "3", "4"]);
      expect(rows.map((row) => row[1])).toEqual(["generator", "fixer", "rewrite", "fixer"]);
      expect(rows.map((row) => row[2])).toEqual(["KeyError", "KeyError", "AssertionError", "passed"]);
      expect(rows[0]![4]).not.toMatch(/repeat/);
      expect(rows[1]![4]).toMatch(/repeat ×2$/);
      expect(rows[1]![4]!.replace(/repeat.*/, "").trim()).toBe(rows[0]![4]);
    });

    it("shows the changed lines of each attempt against the one before", async () => {
      const diff = (attempt: number, kind: string) =>
        page.$$eval(`#attempt-${attempt} .diff .${kind}`, (lines) => lines.map((line) => line.textContent));
      expect(await diff(2, "del")).toEqual(["-config = {}"]);
      expect(await diff(2, "add")).toEqual(['+config = {"name": "x"}']);
      expect(await diff(4, "add")).toEqual(['+greeting = "hi"', "+print(greeting)"]);
      expect(await page.$eval("#attempt-1 .diff-from-previous", (details) => details.textContent)).toMatch(
        /nothing to compare/,
      );
    });

    it("shows the traceback, the output, the live lines and the critic's verdict of a failed attempt", async () => {
      const text = await page.$eval("#attempt-1", (section) => section.textContent);
      expect(text).toMatch(/Traceback[\s\S]*KeyError: 'greeting'/);
      expect(text).toMatch(/Live output \(last \d+ lines, as streamed\)/);
      expect(text).toMatch(/Critic\s*failed: KeyError/);
      // Highlighted when the report was written: the comment is a span of its own, its markup still text.
      expect(await page.$eval("#attempt-1 pre.program .hljs-comment", (span) => span.textContent)).toBe(
        "# </script><script>window.__fromCode = 1</script>",
      );
    });

    it("runs none of the markup the task, the programs and their output carry, and shows it as text", async () => {
      const flags = await page.evaluate(() => {
        const seen = window as unknown as Record<string, unknown>;
        return [typeof seen.__fromTask, typeof seen.__fromCode, typeof seen.__fromOutput];
      });
      expect(flags).toEqual(["undefined", "undefined", "undefined"]);
      expect(await page.$$eval("img", (images) => images.length)).toBe(0);
      expect(pageErrors).toEqual([]);
      const text = await page.evaluate(() => document.body.textContent);
      expect(text).toContain(TASK);
      expect(text).toContain(PRINTED);
      expect(text).toContain("# </script><script>window.__fromCode = 1</script>");
      // The inline JSON escapes `</` and `<!--`: the whole report has one closing </script> per script it runs.
      const html = readFileSync(reportPath, "utf8");
      const data = html.slice(
        html.indexOf('id="report-data">'),
        html.indexOf("</script>", html.indexOf('id="report-data">')),
      );
      expect(data).not.toMatch(/<\/|<!--/);
    });

    it("draws the token charts and the path through the graph, with no network", async () => {
      expect(outsideRequests).toEqual([]);
      expect(await page.$eval("body", (body) => body.getAttribute("data-charts-rendered"))).toBe("2");
      await page.bringToFront();
      const bars = await pixelStats(
        (await (await page.$("#chart-node-tokens"))!.screenshot({ encoding: "base64" })) as string,
      );
      expect(bars.inked).toBeGreaterThan(2_000);
      expect(bars.colours.has("1f6feb")).toBe(true);
      const nodes = await page.$$eval("#graph-path g.node", (groups) =>
        groups.map((group) => group.getAttribute("data-node")),
      );
      expect(nodes).toEqual(["__start__", "generator", "executor", "critic", "fixer", "finish", "__end__"]);
      const taken = await page.$$eval("#graph-path path.edge.taken", (paths) =>
        Object.fromEntries(
          paths.map((path) => [path.getAttribute("data-edge"), Number(path.getAttribute("data-count"))]),
        ),
      );
      expect(taken["executor>critic"]).toBe(4);
      expect(taken["critic>fixer"]).toBe(2);
      expect(taken["critic>generator"]).toBe(1);
      expect(taken["critic>finish"]).toBe(1);
      expect(taken["finish>__end__"]).toBe(1);
    });

    it("fits the path through the graph on a 1280 px page, and shrinks it on a narrow one", async () => {
      const fits = () =>
        page.$eval("#graph-path", (svg) => {
          const figure = svg.closest("figure")!;
          return {
            right: svg.getBoundingClientRect().right,
            figureRight: figure.getBoundingClientRect().right,
            pageScrolls: document.documentElement.scrollWidth > document.documentElement.clientWidth,
          };
        });
      for (const width of [1280, 700]) {
        await page.setViewport({ width, height: 900 });
        const seen = await fits();
        expect(seen.right, `at ${width} px`).toBeLessThanOrEqual(seen.figureRight + 0.5);
        // The page's own tables may be wider than a narrow window; at 1280 px nothing is.
        if (width === 1280) expect(seen.pageScrolls).toBe(false);
      }
      await page.setViewport({ width: 1200, height: 900 });
    });

    it("looks like a report in a screenshot: many colours, not one blank page", async () => {
      await page.bringToFront();
      const path = join(dir, "report.png");
      const shot = await page.screenshot({ fullPage: true });
      writeFileSync(path, shot);
      expect(statSync(path).size).toBeGreaterThan(10_000);
      const stats = await pixelStats(Buffer.from(shot).toString("base64"));
      expect(stats.colours.size).toBeGreaterThan(50);
      expect(stats.inked).toBeGreaterThan(100_000);
    });
  },
);

describe.skipIf(noChromium !== null)(
  `inline report data in headless Chromium${noChromium ? ` (skipped: ${noChromium})` : ""}`,
  () => {
    it("keeps `</script>` and `<!--` in the inline JSON inside its element, and reads them back intact", async () => {
      const hostileText = "</script><script>window.__fromData = 1</script><!-- <script>";
      const path = join(dir, "data.html");
      writeFileSync(
        path,
        htmlPage({
          title: "data",
          body: "<p>data</p>",
          data: { hostileText },
          scripts: [
            'document.body.setAttribute("data-read", JSON.parse(document.getElementById("report-data").textContent).hostileText);',
          ],
        }),
      );
      const dataPage = await browser!.newPage();
      await dataPage.goto(pathToFileURL(path).href, { waitUntil: "load" });
      expect(await dataPage.evaluate(() => typeof (window as unknown as Record<string, unknown>).__fromData)).toBe(
        "undefined",
      );
      expect(await dataPage.$eval("body", (body) => body.getAttribute("data-read"))).toBe(hostileText);
      await dataPage.close();
    });
  },
);

describe("a run of many attempts with big programs and big output", () => {
  const ATTEMPTS = 30;
  // 40 KB of program and a flood of output at every attempt, a different error each time.
  const filler = Array.from({ length: 800 }, (_, line) => `# filler line ${line} ${"x".repeat(40)}`).join("\n");
  const bigProgram = (attempt: number) =>
    fence(
      `${filler}\nimport sys\nfor i in range(3000):\n    print("out", i, "y" * 60)\n    print("err", i, file=sys.stderr)\nraise ValueError("failure number ${attempt}")`,
    );

  it("still gives a report of bounded size: every attempt in the timeline, the middle ones' details left out", async () => {
    const thread = "report-big";
    const agent = createAgent({
      model: new ScriptedChatModel(Array.from({ length: ATTEMPTS }, (_, index) => bigProgram(index + 1))),
      sandbox,
      checkpointer: store.checkpointer,
    });
    await agent.invoke(
      { task: "Fail thirty times, loudly." },
      {
        context: parseSettings({ maxAttempts: ATTEMPTS, repeatLimit: ATTEMPTS, tokenBudget: 100_000_000 }),
        configurable: { thread_id: thread },
        recursionLimit: 1_000,
      },
    );
    const trace = (await traceThread(store, thread))!;
    expect(trace.attempts).toHaveLength(ATTEMPTS);
    const html = renderRunReport(trace);
    expect(html.match(/<tr class="attempt-row/g)).toHaveLength(ATTEMPTS);
    const detailed = REPORT_LIMITS.detailedFirst + REPORT_LIMITS.detailedLast;
    expect(html.match(/<section class="attempt"/g)).toHaveLength(detailed);
    expect(html).toContain(`The details of ${ATTEMPTS - detailed} attempts in the middle are left out`);
    // Chart.js is about 200 KB of it; each detailed attempt is capped (program, outputs, live lines).
    expect(html.length).toBeLessThan(1_000_000);
    expect(html).toMatch(/characters cut/);
  }, 300_000);
});
