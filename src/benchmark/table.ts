import type { BenchmarkReport } from "./records.js";

// The report as text: the banner and rows that the terminal table and the HTML report share.

const percent = (fraction: number): string => `${(fraction * 100).toFixed(1)}%`;
const ofTasks = (solved: number, tasks: number): string => `${solved} (${percent(tasks === 0 ? 0 : solved / tasks)})`;

/** The headline lines every rendering starts with: who answered, and what the runs learned from. */
export function reportBanner(report: BenchmarkReport): string[] {
  const lines: string[] = [];
  if (report.model.simulated)
    lines.push(report.model.label ?? "SIMULATED MODEL: these figures test the harness, not a model.");
  if (report.feedback.mode === "oracle") lines.push(report.feedback.label);
  return lines;
}

/** The report's figures as label/value rows, shared by the terminal table and the HTML report. */
export function summaryRows(report: BenchmarkReport): Array<[string, string]> {
  const { maxAttempts } = report.settings;
  const feedback =
    report.feedback.mode === "oracle"
      ? "ORACLE (hidden tests reach the fixer)"
      : `visible: docstring examples (${report.feedback.tasksWithVisibleTests} of ${report.tasks} tasks) and self-checks`;
  const rows: Array<[string, string]> = [
    ["model", report.model.simulated ? `${report.model.name} (SIMULATED, not a model result)` : report.model.name],
    ["dataset", report.dataset],
    ["feedback", feedback],
    ["tasks", String(report.tasks)],
    ["pass@1, first attempt (hidden tests)", ofTasks(report.solvedFirstAttempt, report.tasks)],
    [`final pass, hidden tests (max ${maxAttempts} attempts)`, ofTasks(report.solvedFinal, report.tasks)],
    [`solved within 1..${maxAttempts} attempts`, report.solvedWithin.join(" / ")],
    [
      "runs passing their own feedback",
      `${report.feedbackPassed} (hidden tests reject ${report.feedbackPassedHiddenFailed})`,
    ],
    ["mean attempts of solved", report.meanAttemptsSolved === null ? "-" : report.meanAttemptsSolved.toFixed(2)],
    ["input tokens per task", report.tokens.inputPerTask.toFixed(0)],
    ["output tokens per task", report.tokens.outputPerTask.toFixed(0)],
    [
      "input tokens per solved task",
      report.tokens.inputPerSolved === null ? "-" : report.tokens.inputPerSolved.toFixed(0),
    ],
    [
      "output tokens per solved task",
      report.tokens.outputPerSolved === null ? "-" : report.tokens.outputPerSolved.toFixed(0),
    ],
    [
      "solved per 1k tokens, repair",
      report.tokens.solvedPerThousandTokens === null ? "-" : report.tokens.solvedPerThousandTokens.toFixed(3),
    ],
  ];
  const sampling = report.sampling;
  if (sampling) {
    rows.push(
      [
        `pass@k, k = 1..${sampling.samples} (unbiased, ${sampling.samples} samples)`,
        sampling.passAtK.map(percent).join(" / "),
      ],
      [`resampling: solved within 1..${sampling.samples} samples`, sampling.solvedWithin.join(" / ")],
      ["tokens per task, resampling", sampling.tokensPerTask.toFixed(0)],
      [
        "solved per 1k tokens, resampling",
        sampling.solvedPerThousandTokens === null ? "-" : sampling.solvedPerThousandTokens.toFixed(3),
      ],
      [
        "at repair's tokens: resampling / repair",
        `${sampling.atRepairTokens.resampling} / ${sampling.atRepairTokens.repair}`,
      ],
    );
  }
  const compared = report.strategies;
  if (compared) {
    for (const strategy of compared.strategies) {
      const figures = compared.perStrategy[strategy];
      if (!figures) continue;
      rows.push([
        `${strategy}, ${compared.candidates} candidate${compared.candidates === 1 ? "" : "s"}: solved / tokens per task / per 1k`,
        `${figures.solved} / ${figures.tokensPerTask.toFixed(0)} / ${figures.solvedPerThousandTokens === null ? "-" : figures.solvedPerThousandTokens.toFixed(3)}`,
      ]);
    }
  }
  rows.push(
    ["wall time per task", `${(report.wallMs.meanPerTask / 1000).toFixed(2)} s`],
    ["total wall time", `${(report.wallMs.total / 1000).toFixed(1)} s (concurrency ${report.settings.concurrency})`],
    [
      "failed / stuck / budget exhausted",
      `${report.statusCounts.failed} / ${report.statusCounts.stuck} / ${report.statusCounts.budget_exhausted}`,
    ],
  );
  if (report.statusCounts.model_error > 0) rows.push(["model errors", String(report.statusCounts.model_error)]);
  if (report.statusCounts.error > 0) rows.push(["harness errors", String(report.statusCounts.error)]);
  const failures = Object.entries(report.failuresByErrorClass);
  rows.push([
    "failures by error class (hidden)",
    failures.length === 0 ? "none" : failures.map(([name, n]) => `${name} ${n}`).join(", "),
  ]);
  const tokens = Object.entries(report.tokensByErrorClass);
  rows.push([
    "tokens by error class repaired",
    tokens.length === 0 ? "none" : tokens.map(([name, n]) => `${name} ${n}`).join(", "),
  ]);
  return rows;
}

/** The report as an aligned two-column table for the terminal. */
export function formatBenchmarkTable(report: BenchmarkReport): string {
  const rows = summaryRows(report);
  const width = Math.max(...rows.map(([name]) => name.length));
  const lines = rows.map(([name, value]) => `${name.padEnd(width)}  ${value}`);
  const banner = reportBanner(report);
  return [...banner, ...(banner.length > 0 ? [""] : []), ...lines].join("\n");
}
