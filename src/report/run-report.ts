import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { structuredPatch } from "diff";
import hljs from "highlight.js/lib/core";
import javascript from "highlight.js/lib/languages/javascript";
import python from "highlight.js/lib/languages/python";
import { type ArtifactFile, describeRuntimeValues, describeTestIsolation, type Execution } from "../internal.js";
import { renderGraphPath } from "./graph-svg.js";
import { chartJsSource, escapeHtml, htmlPage } from "./html.js";
import type { ArtifactsTrace, AttemptTrace, RunTrace } from "./trace.js";

hljs.registerLanguage("python", python);
hljs.registerLanguage("javascript", javascript);

/**
 * Caps that keep a report's size bounded whatever the run did: a program or an output of a
 * megabyte is shown cut, and a run of a hundred attempts lists every attempt in the timeline but
 * shows the full detail of only the first and the last ones.
 */
export const REPORT_LIMITS = {
  codeChars: 12_000,
  outputChars: 3_000,
  tracebackChars: 4_000,
  textChars: 2_000,
  /** An image artifact larger than this is linked, not drawn inline. */
  inlineImageBytes: 2 * 1024 * 1024,
  detailedFirst: 5,
  detailedLast: 15,
} as const;

const cutNote = (cut: number) => (cut > 0 ? `\n… (${cut} characters cut)` : "");
const head = (text: string, limit: number) => text.slice(0, limit) + cutNote(text.length - limit);
const tail = (text: string, limit: number) =>
  (text.length > limit ? `(${text.length - limit} characters cut) …\n` : "") + text.slice(-limit);

const ms = (value: number | undefined): string =>
  value === undefined ? "-" : value < 1000 ? `${Math.round(value)} ms` : `${(value / 1000).toFixed(1)} s`;

/** highlight.js escapes the text it is given, so its HTML is safe to inline; it runs now, so the page needs no script for it. */
function highlighted(code: string, language: string): string {
  const shown = head(code, REPORT_LIMITS.codeChars);
  const html = hljs.getLanguage(language) ? hljs.highlight(shown, { language }).value : escapeHtml(shown);
  return `<pre class="program"><code class="hljs language-${escapeHtml(language)}">${html}</code></pre>`;
}

function diffFrom(previous: AttemptTrace | undefined, current: AttemptTrace): string {
  if (!previous) return "<p>The first program: nothing to compare.</p>";
  const before = head(previous.code, REPORT_LIMITS.codeChars);
  const after = head(current.code, REPORT_LIMITS.codeChars);
  if (before === after) return `<p>The same program as attempt ${previous.attempt}.</p>`;
  const patch = structuredPatch(`attempt ${previous.attempt}`, `attempt ${current.attempt}`, before, after);
  const lines = patch.hunks.flatMap((hunk) => [
    `<span class="hunk">@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@</span>`,
    ...hunk.lines.map((line) => {
      const kind = line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "ctx";
      return `<span class="${kind}">${escapeHtml(line)}</span>`;
    }),
  ]);
  // Each line is its own block, so no newline between them (it would show as a blank line).
  return `<pre class="diff">${lines.join("")}</pre>`;
}

const block = (title: string, text: string | undefined, limit: number, cls = ""): string =>
  text?.trim() ? `<h4>${title}</h4><pre class="${cls}">${escapeHtml(tail(text, limit))}</pre>` : "";

const list = (title: string, items: string[]): string =>
  items.length > 0 ? `<h4>${title}</h4><ul>${items.map((item) => `<li>${item}</li>`).join("")}</ul>` : "";

/** Image types a browser shows from a data: URI in an <img>, where no script runs (an SVG's included). */
const INLINE_IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml"]);

const sizeOf = (bytes: number): string =>
  bytes < 1024
    ? `${bytes} bytes`
    : bytes < 1024 * 1024
      ? `${(bytes / 1024).toFixed(1)} KiB`
      : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/** The file's bytes, when the folder still holds it, it is the size the state says, and small enough to inline. */
function readKept(folder: string, file: ArtifactFile): Buffer | undefined {
  if (file.bytes > REPORT_LIMITS.inlineImageBytes) return undefined;
  try {
    const bytes = readFileSync(join(folder, file.name));
    return bytes.length === file.bytes ? bytes : undefined;
  } catch {
    return undefined;
  }
}

/**
 * One artifact: its name, size and sha256; a link to the kept file; an image drawn inline, read
 * when the report is written, so the report still shows it once the folder is gone.
 */
function artifactItem(file: ArtifactFile, folder: string | null): string {
  const facts = `${escapeHtml(sizeOf(file.bytes))}, ${escapeHtml(file.mediaType)}, sha256 <code>${escapeHtml(file.sha256)}</code>`;
  if (!folder) return `<code>${escapeHtml(file.name)}</code> (${facts}; not kept)`;
  const link = `<a href="${escapeHtml(pathToFileURL(join(folder, file.name)).href)}">${escapeHtml(file.name)}</a> (${facts})`;
  const image = INLINE_IMAGE_TYPES.has(file.mediaType) ? readKept(folder, file) : undefined;
  if (!image) return link;
  return `${link}<br><img class="artifact" alt="${escapeHtml(file.name)}" src="data:${escapeHtml(file.mediaType)};base64,${image.toString("base64")}">`;
}

function artifactList(title: string, artifacts: ArtifactsTrace | undefined): string {
  return artifacts
    ? list(
        title,
        artifacts.files.map((file) => artifactItem(file, artifacts.folder)),
      )
    : "";
}

function reviewLine(review: AttemptTrace["review"]): string {
  if (!review) return "";
  const verdict = `<span class="${review.verdict === "approved" ? "pass" : "fail"}">${review.verdict}</span>`;
  const reasons = review.reasons ? `: ${escapeHtml(head(review.reasons, REPORT_LIMITS.textChars))}` : "";
  return `<h4>LLM review</h4><p class="review">The critic model reviewed the clean run: ${verdict}${reasons}</p>`;
}

/** What the failed run computed, as the fixer read it (see describeRuntimeValues). */
function valuesBlock(run: Execution | undefined): string {
  if (!run?.values) return "";
  return block(
    "Values at the failure",
    describeRuntimeValues(run.values).join("\n"),
    REPORT_LIMITS.tracebackChars,
    "values",
  );
}

/** Each request the program made through the egress proxy, refused ones with their reason. */
function networkList(run: Execution | undefined): string {
  const egress = run?.egress;
  if (!egress) return "";
  const items = egress.connections.map((connection) => {
    const where = `<code>${escapeHtml(`${connection.host}:${connection.port}`)}</code> (${connection.method === "CONNECT" ? "HTTPS" : "HTTP"})`;
    if (!connection.allowed) {
      return `${where}: <span class="fail">refused</span>, ${escapeHtml(connection.reason ?? "not allowed")}`;
    }
    const bytes = `${escapeHtml(sizeOf(connection.bytesUp))} up, ${escapeHtml(sizeOf(connection.bytesDown))} down`;
    return `${where}: <span class="pass">allowed</span>, ${bytes}${connection.reason ? `; ${escapeHtml(connection.reason)}` : ""}`;
  });
  if (egress.unrecordedRefusals > 0) items.push(`and ${egress.unrecordedRefusals} more refused requests`);
  const title = egress.enforced
    ? "Network (through the egress proxy)"
    : "Network (through the egress proxy; not enforced by this sandbox)";
  return items.length > 0 ? list(title, items) : `<h4>${escapeHtml(title)}</h4><p>No requests.</p>`;
}

/** Which way the run's acceptance tests were judged; nothing for a run without tests. */
function judgedWith(run: Execution | undefined): string {
  if (!run?.testIsolation) return "";
  return `<p class="test-isolation">Judged with ${escapeHtml(describeTestIsolation(run.testIsolation))}.</p>`;
}

function repeatMark(attempt: AttemptTrace): string {
  return attempt.repeatOf > 0
    ? ` <span class="repeat" title="seen ${attempt.repeatOf} time(s) before">repeat ×${attempt.repeatOf + 1}</span>`
    : "";
}

function timelineRow(attempt: AttemptTrace, detailed: boolean): string {
  const number = detailed ? `<a href="#attempt-${attempt.attempt}">${attempt.attempt}</a>` : String(attempt.attempt);
  return [
    `<tr class="attempt-row ${attempt.outcome === "passed" ? "passed" : "failed"}">`,
    `<td>${number}</td>`,
    `<td>${escapeHtml(attempt.author)}</td>`,
    `<td class="${attempt.outcome === "passed" ? "pass" : "fail"}">${escapeHtml(attempt.outcome)}</td>`,
    `<td>${escapeHtml(attempt.errorType ?? "")}</td>`,
    `<td><code>${escapeHtml(attempt.fingerprint ?? "")}</code>${repeatMark(attempt)}</td>`,
    `<td>${attempt.review ? `<span class="${attempt.review.verdict === "approved" ? "pass" : "fail"}">${attempt.review.verdict}</span>` : ""}</td>`,
    `<td>${attempt.tokens}</td>`,
    `<td>${ms(attempt.run?.durationMs)}</td>`,
    `<td>${ms(attempt.wallMs)}</td>`,
    "</tr>",
  ].join("");
}

function attemptSection(attempt: AttemptTrace, previous: AttemptTrace | undefined, language: string): string {
  const run = attempt.run;
  const live = attempt.liveTail.map((line) => `<span class="${line.stream}">${escapeHtml(line.line)}</span>`);
  const tokenRows = Object.entries(attempt.tokensByNode).map(
    ([node, count]) =>
      `<tr><td>${escapeHtml(node)}</td><td>${count.inputTokens}</td><td>${count.outputTokens}</td></tr>`,
  );
  const critique = attempt.critique;
  return [
    `<section class="attempt" id="attempt-${attempt.attempt}">`,
    `<h3>Attempt ${attempt.attempt}, written by the ${escapeHtml(attempt.author)}: <span class="${attempt.outcome === "passed" ? "pass" : "fail"}">${escapeHtml(attempt.outcome)}</span>${repeatMark(attempt)}</h3>`,
    `<p>${run ? `ran ${ms(run.durationMs)}, status ${escapeHtml(run.status)}, exit code ${run.exitCode ?? "-"}${run.signal ? `, signal ${escapeHtml(run.signal)}` : ""}${run.truncated ? ", output truncated" : ""}; ` : ""}${attempt.tokens} tokens</p>`,
    attempt.code ? highlighted(attempt.code, language) : "<p>The reply held no program.</p>",
    `<details class="diff-from-previous" open><summary>Changes from the attempt before</summary>${diffFrom(previous, attempt)}</details>`,
    block(
      "Traceback",
      run?.error?.traceback || (run?.error ? `${run.error.type}: ${run.error.message}` : ""),
      REPORT_LIMITS.tracebackChars,
      "traceback",
    ),
    valuesBlock(run),
    networkList(run),
    block("stdout (end)", run?.stdout, REPORT_LIMITS.outputChars),
    block("stderr (end)", run?.stderr, REPORT_LIMITS.outputChars),
    live.length > 0
      ? `<h4>Live output (last ${live.length} lines, as streamed)</h4><pre class="live">${live.join("\n")}</pre>`
      : "",
    critique
      ? `<h4>Critic</h4><p class="verdict"><span class="${critique.passed ? "pass" : "fail"}">${critique.passed ? "passed" : "failed"}</span>: ${escapeHtml(head(critique.summary, REPORT_LIMITS.textChars))}</p>${judgedWith(run)}${critique.diagnosis ? `<p class="diagnosis">${escapeHtml(head(critique.diagnosis, REPORT_LIMITS.textChars))}</p>` : ""}`
      : "",
    attempt.decision ? `<p>Next: ${escapeHtml(describeDecision(attempt.decision))}</p>` : "",
    list(
      "Notes",
      attempt.notes.map(
        (note) => `${escapeHtml(note.source)}: ${escapeHtml(head(note.message, REPORT_LIMITS.textChars))}`,
      ),
    ),
    list(
      "Objections",
      attempt.objections.map(
        (objection) =>
          `${escapeHtml(objection.source)}: ${escapeHtml(objection.type)}: ${escapeHtml(head(objection.message, REPORT_LIMITS.textChars))}`,
      ),
    ),
    reviewLine(attempt.review),
    artifactList("Artifacts", attempt.artifacts),
    tokenRows.length > 0
      ? `<table class="attempt-tokens"><tr><th>node</th><th>input tokens</th><th>output tokens</th></tr>${tokenRows.join("")}</table>`
      : "",
    "</section>",
  ].join("\n");
}

function describeDecision(decision: NonNullable<AttemptTrace["decision"]>): string {
  if (decision.next === "finish") return `finish, ${decision.status}: ${decision.reason}`;
  if (decision.next === "generator") return `a fresh rewrite (the error ${decision.fingerprint} kept coming back)`;
  return "repair by the fixer";
}

/** Which attempts get their full section; the rest keep their timeline row. */
export function detailedAttempts(count: number): (index: number) => boolean {
  const { detailedFirst, detailedLast } = REPORT_LIMITS;
  return (index) => count <= detailedFirst + detailedLast || index < detailedFirst || index >= count - detailedLast;
}

function header(trace: RunTrace): string {
  const usage = trace.usage;
  const rows: Array<[string, string]> = [
    ["status", trace.status],
    ["reason", trace.reason ?? "-"],
    ["attempts", String(trace.attempts.length)],
    ...(trace.agreement ? [["candidates", trace.agreement] as [string, string]] : []),
    [
      "tokens",
      usage
        ? `${usage.totalTokens} (input ${usage.inputTokens}, output ${usage.outputTokens}; ${usage.calls} model calls)`
        : "-",
    ],
    ["models", trace.models.join(", ") || "-"],
    ["wall time", ms(trace.wallMs)],
    ["thread", trace.threadId ?? "-"],
  ];
  const byNode = Object.entries(usage?.byNode ?? {}).map(
    ([node, count]) =>
      `<tr><td>${escapeHtml(node)}</td><td>${count.inputTokens}</td><td>${count.outputTokens}</td><td>${count.calls}</td></tr>`,
  );
  return [
    `<h1>selfheal run: <span class="${trace.status === "passed" ? "pass" : "fail"}">${escapeHtml(trace.status)}</span></h1>`,
    `<pre class="task">${escapeHtml(head(trace.task, REPORT_LIMITS.textChars))}</pre>`,
    `<table class="summary">${rows.map(([name, value]) => `<tr><th>${name}</th><td>${escapeHtml(value)}</td></tr>`).join("")}</table>`,
    byNode.length > 0
      ? `<table class="node-tokens"><tr><th>node</th><th>input tokens</th><th>output tokens</th><th>calls</th></tr>${byNode.join("")}</table>`
      : "",
    artifactList(`Artifacts (kept from attempt ${trace.artifacts?.attempt})`, trace.artifacts),
  ].join("\n");
}

const CHART_SCRIPT = String.raw`
(function () {
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var colours = ["#1f6feb", "#d1242f", "#1a7f37", "#bf8700", "#8250df", "#0969da", "#cf222e"];
  Chart.defaults.animation = false;
  var charts = [
    new Chart(document.getElementById("chart-node-tokens"), {
      type: "bar",
      data: { labels: data.nodes, datasets: [
        { label: "input tokens", data: data.nodeInput, backgroundColor: "#1f6feb" },
        { label: "output tokens", data: data.nodeOutput, backgroundColor: "#bf8700" }
      ] },
      options: { responsive: false, scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true } } }
    }),
    new Chart(document.getElementById("chart-attempt-tokens"), {
      type: "bar",
      data: { labels: data.attempts, datasets: data.nodes.map(function (node, index) {
        return { label: node, data: data.perAttempt[index], backgroundColor: colours[index % colours.length] };
      }) },
      options: { responsive: false, scales: { x: { stacked: true, title: { display: true, text: "attempt" } }, y: { stacked: true, beginAtZero: true, title: { display: true, text: "tokens" } } } }
    })
  ];
  document.body.setAttribute("data-charts-rendered", String(charts.length));
})();
`;

function chartData(trace: RunTrace) {
  const nodes = Object.keys(trace.usage?.byNode ?? {});
  return {
    nodes,
    nodeInput: nodes.map((node) => trace.usage?.byNode[node]?.inputTokens ?? 0),
    nodeOutput: nodes.map((node) => trace.usage?.byNode[node]?.outputTokens ?? 0),
    attempts: trace.attempts.map((attempt) => String(attempt.attempt)),
    perAttempt: nodes.map((node) =>
      trace.attempts.map((attempt) => {
        const count = attempt.tokensByNode[node];
        return count ? count.inputTokens + count.outputTokens : 0;
      }),
    ),
  };
}

/** highlight.js's GitHub theme, from the installed package. */
function highlightTheme(): string {
  return readFileSync(createRequire(import.meta.url).resolve("highlight.js/styles/github.css"), "utf8");
}

const STYLE = `
.attempt { border-top: 1px solid #d0d7de; margin-top: 1.5rem; }
.diff .add { background: #dafbe1; display: block; } .diff .del { background: #ffebe9; display: block; }
.diff .hunk { color: #8250df; display: block; } .diff .ctx { display: block; color: #57606a; }
.live .stderr { color: #d1242f; }
.repeat { background: #fff8c5; border: 1px solid #d4a72c; border-radius: 4px; padding: 0 .3rem; font-size: 12px; }
.task { white-space: pre-wrap; }
img.artifact { max-width: 100%; max-height: 480px; border: 1px solid #d0d7de; margin: .3rem 0; }
tr.failed td:first-child { border-left: 4px solid #d1242f; } tr.passed td:first-child { border-left: 4px solid #1a7f37; }
`;

/** A run as one self-contained HTML file: header, timeline, charts, the path through the graph, and every attempt. */
export function renderRunReport(trace: RunTrace): string {
  const detailed = detailedAttempts(trace.attempts.length);
  const sections = trace.attempts.map((attempt, index) =>
    detailed(index) ? attemptSection(attempt, trace.attempts[index - 1], trace.language) : "",
  );
  const left = trace.attempts.length - sections.filter(Boolean).length;
  const leftOut =
    left > 0
      ? `<p class="left-out">The details of ${left} attempts in the middle are left out to keep this file small; their rows are in the timeline, and <code>selfheal history</code> lists every checkpoint.</p>`
      : "";
  const firstLast = sections.slice(0, REPORT_LIMITS.detailedFirst).join("\n");
  const rest = sections.slice(REPORT_LIMITS.detailedFirst).join("\n");
  return htmlPage({
    title: `selfheal run ${trace.threadId ?? ""}: ${trace.status}`,
    style: highlightTheme() + STYLE,
    data: chartData(trace),
    scripts: [chartJsSource(), CHART_SCRIPT],
    body: [
      header(trace),
      "<h2>Timeline</h2>",
      `<table id="timeline"><tr><th>attempt</th><th>written by</th><th>outcome</th><th>error type</th><th>fingerprint</th><th>LLM review</th><th>tokens</th><th>ran</th><th>wall</th></tr>${trace.attempts.map((attempt, index) => timelineRow(attempt, detailed(index))).join("")}</table>`,
      '<div class="charts">',
      '<figure><figcaption>Tokens per node</figcaption><canvas id="chart-node-tokens" width="480" height="280"></canvas></figure>',
      '<figure><figcaption>Tokens per attempt, by node</figcaption><canvas id="chart-attempt-tokens" width="480" height="280"></canvas></figure>',
      "</div>",
      `<figure><figcaption>Path through the graph (${trace.path.length} node runs)</figcaption>${renderGraphPath(trace)}</figure>`,
      "<h2>Attempts</h2>",
      firstLast,
      leftOut,
      rest,
    ].join("\n"),
  });
}
