// `selfheal/report`: the self-contained HTML reports, a run's and the page parts the benchmark's shares.

export { edgeCounts, renderGraphPath } from "./graph-svg.js";
export { BASE_STYLE, chartJsSource, escapeHtml, type HtmlPage, htmlPage, inlineScript, scriptJson } from "./html.js";
export { detailedAttempts, REPORT_LIMITS, renderRunReport } from "./run-report.js";
export {
  type ArtifactsTrace,
  type AttemptTrace,
  type NodeTokens,
  type ReviewTrace,
  type RunStep,
  type RunTrace,
  type TraceMeta,
  traceRun,
} from "./trace.js";
