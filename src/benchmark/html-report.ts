import { chartJsSource, escapeHtml, htmlPage } from "../report/index.js";
import type { BenchmarkReport, TaskOutcome } from "./records.js";
import { reportBanner, summaryRows } from "./table.js";

/** An id usable as a URL fragment: `HumanEval/0` -> `task-HumanEval-0`. */
export const taskAnchor = (taskId: string): string => `task-${taskId.replace(/[^A-Za-z0-9_-]+/g, "-")}`;

const verdict = (passed: boolean): string =>
  passed ? '<span class="pass">pass</span>' : '<span class="fail">fail</span>';

export interface HtmlReportOptions {
  /** Where each task's own run report is, relative to the benchmark report; no link when it gives undefined. */
  runReportHref?: (taskId: string) => string | undefined;
}

function taskRow(task: TaskOutcome, options: HtmlReportOptions): string {
  const anchor = taskAnchor(task.taskId);
  const runReport = options.runReportHref?.(task.taskId);
  const attempts = task.attemptRecords
    .map((record) => `<a href="#${anchor}-attempt-${record.attempt}">${record.attempt}</a>`)
    .join(" ");
  return [
    "<tr>",
    `<td><a href="#${anchor}">${escapeHtml(task.taskId)}</a></td>`,
    `<td>${escapeHtml(task.status)}</td>`,
    `<td>${attempts || "-"}</td>`,
    `<td>${verdict(task.solvedFirstAttempt)}</td>`,
    `<td>${verdict(task.solved)}</td>`,
    `<td>${task.inputTokens + task.outputTokens}</td>`,
    `<td>${escapeHtml(task.finalErrorClass ?? "")}</td>`,
    `<td>${runReport ? `<a class="run-report" href="${escapeHtml(runReport)}">run report</a>` : "-"}</td>`,
    "</tr>",
  ].join("");
}

function taskSection(task: TaskOutcome): string {
  const anchor = taskAnchor(task.taskId);
  const attempts = task.attemptRecords.map((record) => {
    const hiddenError = record.hidden.passed
      ? ""
      : ` (${escapeHtml(record.hidden.error ?? record.hidden.errorClass ?? record.hidden.status)})`;
    return [
      `<section class="attempt" id="${anchor}-attempt-${record.attempt}">`,
      `<h4>attempt ${record.attempt}, by the ${escapeHtml(record.node)}: feedback ${escapeHtml(record.feedback)}; hidden tests ${verdict(record.hidden.passed)}${hiddenError}; ${record.tokens} tokens</h4>`,
      `<pre><code>${escapeHtml(record.code)}</code></pre>`,
      "</section>",
    ].join("\n");
  });
  const samples = (task.samples ?? []).map(
    (sample) =>
      `<details class="sample"><summary>sample ${sample.sample}: feedback ${escapeHtml(sample.feedback)}; hidden tests ${verdict(sample.hidden.passed)}; ${sample.tokens} tokens</summary><pre><code>${escapeHtml(sample.code)}</code></pre></details>`,
  );
  return [
    `<section class="task" id="${anchor}">`,
    `<h3>${escapeHtml(task.taskId)}: ${escapeHtml(task.status)}, hidden tests ${verdict(task.solved)}</h3>`,
    task.reason ? `<p>${escapeHtml(task.reason)}</p>` : "",
    ...attempts,
    ...samples,
    "</section>",
  ].join("\n");
}

/** Counts of each failure class: every failed attempt by its feedback, and every unsolved task by the hidden tests. */
function errorClassCounts(report: BenchmarkReport): { classes: string[]; attempts: number[]; unsolved: number[] } {
  const attempts: Record<string, number> = {};
  for (const task of report.perTask) {
    for (const outcome of task.attemptOutcomes)
      if (outcome !== "passed") attempts[outcome] = (attempts[outcome] ?? 0) + 1;
  }
  const classes = [...new Set([...Object.keys(attempts), ...Object.keys(report.failuresByErrorClass)])].sort();
  return {
    classes,
    attempts: classes.map((name) => attempts[name] ?? 0),
    unsolved: classes.map((name) => report.failuresByErrorClass[name] ?? 0),
  };
}

// Animation off: the charts are drawn in one pass, so a screenshot taken on load shows them.
const CHART_SCRIPT = String.raw`
(function () {
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var repairColour = "#1f6feb", resampleColour = "#d1242f";
  Chart.defaults.animation = false;
  function line(id, labels, series, xTitle) {
    return new Chart(document.getElementById(id), {
      type: "line",
      data: { labels: labels, datasets: series },
      options: {
        responsive: false,
        scales: {
          x: { title: { display: true, text: xTitle } },
          y: { beginAtZero: true, suggestedMax: data.tasks, title: { display: true, text: "tasks solved (hidden tests)" } }
        }
      }
    });
  }
  var attempts = data.curves.byAttempt, tokens = data.curves.byTokens;
  var bySteps = [{ label: "repair", data: attempts.repair, borderColor: repairColour, backgroundColor: repairColour }];
  if (attempts.resampling) bySteps.push({ label: "resampling", data: attempts.resampling, borderColor: resampleColour, backgroundColor: resampleColour });
  var byTokens = [{ label: "repair", data: tokens.repair, borderColor: repairColour, backgroundColor: repairColour, stepped: true }];
  // With strategies compared (bench --strategy a,b,c), one curve each at the same candidates and budget.
  if (tokens.strategies) {
    var strategyColours = { repair: repairColour, resample: resampleColour, mixed: "#1a7f37" };
    byTokens = Object.keys(tokens.strategies).map(function (name) {
      return { label: "strategy " + name + ", " + data.candidates + " candidate(s)", data: tokens.strategies[name], borderColor: strategyColours[name], backgroundColor: strategyColours[name], stepped: true };
    });
  }
  if (tokens.resampling) byTokens.push({ label: "resampling", data: tokens.resampling, borderColor: resampleColour, backgroundColor: resampleColour, stepped: true, borderDash: [6, 4] });
  var charts = [
    line("chart-attempts", attempts.programs, bySteps, "programs written per task (attempts, or samples)"),
    line("chart-tokens", tokens.budgets, byTokens, "tokens allowed per task"),
    new Chart(document.getElementById("chart-errors"), {
      type: "bar",
      data: {
        labels: data.errors.classes,
        datasets: [
          { label: "failed attempts (run's feedback)", data: data.errors.attempts, backgroundColor: "#bf8700" },
          { label: "unsolved tasks (hidden tests)", data: data.errors.unsolved, backgroundColor: "#8250df" }
        ]
      },
      options: { responsive: false, scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } }
    })
  ];
  document.body.setAttribute("data-charts-rendered", String(charts.length));
})();
`;

const STYLE = `
.banner { padding: .6rem .9rem; border-radius: 6px; margin: .5rem 0; font-weight: 600; }
.banner.simulated { background: #fff8c5; border: 1px solid #d4a72c; }
.banner.oracle { background: #ffebe9; border: 1px solid #d1242f; }
.banner.feedback { background: #ddf4ff; border: 1px solid #54aeff; font-weight: 400; }
.task { border-top: 1px solid #d0d7de; margin-top: 1.5rem; }
`;

/**
 * The benchmark report as one self-contained HTML file: the headline figures, three charts
 * (solved against programs written and against tokens, repair beside resampling; failures by
 * class), a table of tasks, and every attempt's program with both verdicts.
 */
export function renderHtmlReport(report: BenchmarkReport, options: HtmlReportOptions = {}): string {
  const banners = [
    ...(report.model.simulated ? [`<p class="banner simulated">${escapeHtml(reportBanner(report)[0]!)}</p>`] : []),
    `<p class="banner ${report.feedback.mode === "oracle" ? "oracle" : "feedback"}">${escapeHtml(report.feedback.label)}</p>`,
  ];
  const chartData = {
    tasks: report.tasks,
    candidates: report.settings.candidates ?? 1,
    curves: report.curves,
    errors: errorClassCounts(report),
  };
  const resamplingNote = report.sampling
    ? ""
    : "<p>No resampling curve: run with <code>--samples N</code> to draw it beside repair.</p>";
  const title = `selfheal bench: ${report.dataset}, ${report.model.name}`;
  return htmlPage({
    title,
    style: STYLE,
    data: chartData,
    scripts: [chartJsSource(), CHART_SCRIPT],
    body: `<h1>${escapeHtml(title)}</h1>
${banners.join("\n")}
<table class="summary">
${summaryRows(report)
  .map(([name, value]) => `<tr><th>${escapeHtml(name)}</th><td>${escapeHtml(value)}</td></tr>`)
  .join("\n")}
</table>
${resamplingNote}
<div class="charts">
<figure><figcaption>Solved against programs written</figcaption><canvas id="chart-attempts" width="520" height="320"></canvas></figure>
<figure><figcaption>Solved against tokens spent per task</figcaption><canvas id="chart-tokens" width="520" height="320"></canvas></figure>
<figure><figcaption>Failures by error class</figcaption><canvas id="chart-errors" width="520" height="320"></canvas></figure>
</div>
<h2>Tasks</h2>
<table class="tasks">
<tr><th>task</th><th>status</th><th>attempts</th><th>first attempt</th><th>final</th><th>tokens</th><th>error class (hidden)</th><th>run</th></tr>
${report.perTask.map((task) => taskRow(task, options)).join("\n")}
</table>
${report.perTask.map(taskSection).join("\n")}`,
  });
}
