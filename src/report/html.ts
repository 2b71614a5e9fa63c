import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/**
 * The page parts both HTML reports share (the benchmark's and a run's): escaping, inline data and
 * scripts, Chart.js, the base style and the skeleton. Every report is one self-contained file
 * that makes no request when it is opened.
 */

export const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (char) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[char]!);

/**
 * JSON safe inside `<script type="application/json">`: escaping every `<` keeps both `</script>`
 * and `<!--` (which would switch the HTML parser into its script-escape states) out of the
 * element; U+2028 and U+2029 are escaped so the text is also valid JavaScript.
 */
export const scriptJson = (value: unknown): string =>
  JSON.stringify(value)
    .replace(/</g, "\\u003c")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");

/** An inline <script> whose source cannot end the element early, even if a future build contains `</script`. */
export const inlineScript = (source: string): string =>
  `<script>${source.replace(/<\/script/gi, "<\\/script").replace(/<!--/g, "<\\!--")}</script>`;

/**
 * Chart.js's UMD build, read from the installed package and inlined, so the report opens with no
 * network (and no CDN can change under it). The package exports no path to the UMD file, so it is
 * found beside the package's main entry.
 */
export function chartJsSource(): string {
  const main = createRequire(import.meta.url).resolve("chart.js");
  return readFileSync(join(dirname(main), "chart.umd.min.js"), "utf8");
}

export const BASE_STYLE = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 1100px; color: #1f2328; padding: 0 1rem; }
table { border-collapse: collapse; margin: 1rem 0; }
td, th { border: 1px solid #d0d7de; padding: .25rem .5rem; text-align: left; vertical-align: top; }
.charts { display: flex; flex-wrap: wrap; gap: 1.5rem; }
figure { margin: 0; } figcaption { font-weight: 600; margin-bottom: .3rem; }
pre { background: #f6f8fa; padding: .6rem; overflow-x: auto; border-radius: 6px; }
.pass { color: #1a7f37; font-weight: 600; } .fail { color: #d1242f; font-weight: 600; }
`;

export interface HtmlPage {
  title: string;
  /** Added after the base style. */
  style?: string;
  body: string;
  /** Put in `<script type="application/json" id="report-data">` for the page's own scripts to read. */
  data?: unknown;
  /** Script sources, inlined in this order after the data. */
  scripts?: string[];
}

export function htmlPage(page: HtmlPage): string {
  const data =
    page.data === undefined ? "" : `<script type="application/json" id="report-data">${scriptJson(page.data)}</script>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(page.title)}</title>
<style>${BASE_STYLE}${page.style ?? ""}</style>
</head>
<body>
${page.body}
${data}
${(page.scripts ?? []).map(inlineScript).join("\n")}
</body>
</html>
`;
}
