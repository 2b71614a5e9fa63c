import { escapeHtml } from "./html.js";
import type { RunTrace } from "./trace.js";

const BOX_WIDTH = 104;
const BOX_HEIGHT = 34;
const GAP = 34;
const ARC = 26;

const START = "__start__";
const END = "__end__";
const label = (node: string): string => (node === START ? "start" : node === END ? "end" : node);

/** How often the run took each edge, `source>target`, start and end included. */
export function edgeCounts(trace: Pick<RunTrace, "path" | "status">, nodes: readonly string[]): Map<string, number> {
  const known = new Set(nodes);
  const walk = [START, ...trace.path.filter((node) => known.has(node) && node !== START && node !== END)];
  if (trace.status !== "running" && !trace.status.startsWith("unfinished") && trace.status !== "awaiting approval")
    walk.push(END);
  const counts = new Map<string, number>();
  for (let index = 1; index < walk.length; index += 1) {
    const key = `${walk[index - 1]}>${walk[index]}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/**
 * The path through the graph as our own SVG, drawn when the report is written: the nodes the run
 * visited in a row, in the graph's order, forward edges arching above and backward ones (the repair
 * loop) below, the edges the run took drawn thick and labelled with how often, and the graph's other
 * edges between those nodes dashed. The nodes the run never reached are left out: the whole graph
 * was 12 boxes and 1656 px, wider than the page. The drawing shrinks to the page's width below that. Mermaid would draw the same picture but needs a
 * browser to lay it out, so the report would have to carry its 3.5 MB bundle and run it on view;
 * this drawing is a few kilobytes, needs no script, and its size does not grow with the attempts.
 */
export function renderGraphPath(trace: Pick<RunTrace, "path" | "status" | "graph">): string {
  const fromPath = [...new Set(trace.path)].filter((node) => node !== START && node !== END);
  const graphNodes = trace.graph?.nodes ?? [START, ...fromPath, END];
  const counts = edgeCounts(trace, graphNodes);
  const visited = new Set([...counts.keys()].flatMap((key) => key.split(">")));
  const inner = graphNodes.filter((node) => visited.has(node) && node !== START && node !== END);
  const nodes = [START, ...inner, ...(visited.has(END) ? [END] : [])];
  const edges = new Map<string, { source: string; target: string }>();
  for (const edge of trace.graph?.edges ?? []) edges.set(`${edge.source}>${edge.target}`, edge);
  for (const key of counts.keys()) {
    const [source, target] = key.split(">") as [string, string];
    edges.set(key, { source, target });
  }
  for (const [key, edge] of edges) if (!nodes.includes(edge.source) || !nodes.includes(edge.target)) edges.delete(key);
  const x = (node: string) => GAP / 2 + nodes.indexOf(node) * (BOX_WIDTH + GAP);
  const span = Math.max(
    1,
    ...[...edges.values()].map((edge) => Math.abs(nodes.indexOf(edge.target) - nodes.indexOf(edge.source))),
  );
  const top = ARC * Math.min(span, 4) + 24;
  const width = nodes.length * (BOX_WIDTH + GAP);
  const height = top * 2 + BOX_HEIGHT;
  const parts: string[] = [];
  for (const [key, { source, target }] of edges) {
    const from = nodes.indexOf(source);
    const to = nodes.indexOf(target);
    const count = counts.get(key) ?? 0;
    const forward = to > from;
    const distance = Math.min(Math.abs(to - from), 4);
    const startX = x(source) + BOX_WIDTH / 2 + (forward ? 10 : -10);
    const endX = x(target) + BOX_WIDTH / 2 + (forward ? -10 : 10);
    const edgeY = forward ? top : top + BOX_HEIGHT;
    const bendY = forward ? edgeY - ARC * distance - 8 : edgeY + ARC * distance + 8;
    const midX = (startX + endX) / 2;
    const taken = count > 0;
    parts.push(
      `<path class="edge${taken ? " taken" : ""}" data-edge="${escapeHtml(key)}" data-count="${count}" d="M${startX},${edgeY} Q${midX},${bendY} ${endX},${edgeY}" fill="none" stroke="${taken ? "#1f6feb" : "#c6cdd5"}" stroke-width="${taken ? Math.min(2 + Math.log2(count) * 1.5, 8).toFixed(1) : 1}"${taken ? "" : ' stroke-dasharray="4 3"'} marker-end="url(#${taken ? "arrow-taken" : "arrow"})"/>`,
    );
    if (taken)
      parts.push(
        `<text class="edge-count" x="${midX}" y="${(edgeY + bendY) / 2 + (forward ? 0 : 10)}" text-anchor="middle">×${count}</text>`,
      );
  }
  for (const node of nodes) {
    parts.push(
      `<g class="node" data-node="${escapeHtml(node)}"><rect x="${x(node)}" y="${top}" width="${BOX_WIDTH}" height="${BOX_HEIGHT}" rx="6" fill="#ddf4ff" stroke="#1f6feb"/><text x="${x(node) + BOX_WIDTH / 2}" y="${top + BOX_HEIGHT / 2 + 5}" text-anchor="middle">${escapeHtml(label(node))}</text></g>`,
    );
  }
  const marker = (id: string, colour: string) =>
    `<marker id="${id}" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="10" markerHeight="10" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="${colour}"/></marker>`;
  return `<svg id="graph-path" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" style="max-width:100%;height:auto" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif" font-size="13"><defs>${marker("arrow", "#c6cdd5")}${marker("arrow-taken", "#1f6feb")}</defs>${parts.join("")}</svg>`;
}
