import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { scratchDir } from "../helpers/scratch.js";

/**
 * The layers of src/, lowest first. A file may import its own folder and the folders listed for
 * it; benchmark and cli stand on the public entries only, as a user's code would.
 */
const SRC = resolve(import.meta.dirname, "../../src");
const ENTRIES = [
  "index.ts",
  // Internal: everything the front ends (CLI, MCP, queue, benchmark, report) build on.
  "internal.ts",
  "settings.ts",
  // Internal: the settings' names and defaults without the schema, for the CLI's flag declarations.
  "names.ts",
  "store/index.ts",
  "report/index.ts",
  "queue/index.ts",
  "benchmark/index.ts",
  // Internal: the benchmark's dataset and feedback names, for `selfheal bench`'s flag declarations.
  "benchmark/names.ts",
  "mcp/index.ts",
  "testing/index.ts",
];
const MAY_IMPORT: Record<string, string[]> = {
  core: [],
  sandbox: ["core"],
  tools: ["core", "sandbox"],
  nodes: ["core", "sandbox", "tools"],
  graph: ["core", "sandbox", "tools", "nodes"],
  store: ["core"],
  // A worker runs the agent (run-thread.ts, worker.ts), so the queue stands on the public entry, as
  // a user's code would, and reaches nothing below it: `selfheal/queue` runs jobs without the CLI.
  queue: ["core", "store", "."],
  // The public entry (src/index.ts) re-exports the layers below the benchmark and the CLI.
  ".": ["core", "sandbox", "tools", "nodes", "graph"],
  // The HTML reports stand on the public entry too; the benchmark's report shares their page parts.
  report: ["entries"],
  benchmark: ["entries"],
  cli: ["entries"],
  // The conformance suite proves the sandbox contract; it needs nothing above it.
  testing: ["core", "sandbox"],
  // The MCP server is a front end like the CLI, which starts it through its entry.
  mcp: ["entries"],
};

/** Writes a source file under a scratch root, making its folders. */
function writeSource(root: string, path: string, text: string): void {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), text);
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? sourceFiles(path) : entry.name.endsWith(".ts") ? [path] : [];
  });
}

function layerOf(src: string, file: string): string {
  const parts = relative(src, file).split("/");
  return parts.length === 1 ? "." : parts[0]!;
}

function relativeImports(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const specifiers = [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)["'](\.{1,2}\/[^"']+)["']/g)].map(
    (match) => match[1]!,
  );
  return specifiers.map((specifier) => resolve(dirname(file), specifier).replace(/\.js$/, ".ts"));
}

function backwardImports(src: string): string[] {
  const problems: string[] = [];
  for (const file of sourceFiles(src)) {
    const from = layerOf(src, file);
    const allowed = MAY_IMPORT[from];
    for (const target of relativeImports(file)) {
      const to = layerOf(src, target);
      if (to === from) continue;
      const isEntry = ENTRIES.includes(relative(src, target));
      const ok = allowed?.includes(to) || (allowed?.includes("entries") && isEntry);
      if (!ok)
        problems.push(
          `${relative(src, file)} -> ${relative(src, target)} (${from} may import ${allowed?.join(", ") || "nothing outside itself"})`,
        );
    }
  }
  return problems.sort();
}

/**
 * The rooms of src/sandbox/: the public surface (index.ts) over one folder per backend, which
 * share only what lies below them: `run/` (a started program's life), `host/` (what this machine
 * offers), `egress/` (the allowlist proxy a run's network goes through), `fork/` (the fork server,
 * which bwrap forks runs from) and the plain files at the top (types, limits, error parsing). A
 * backend never imports a sibling backend; host and egress import no backend and nothing of run/;
 * run/ starts a run's proxy for the backends.
 */
const SANDBOX_MAY_IMPORT: Record<string, string[]> = {
  ".": [],
  host: ["."],
  // The outbound proxy (issue 40) stands alone, as host/ does: the backends that start it stand on it.
  egress: ["."],
  run: [".", "host", "egress"],
  // The fork server (issue 41): its Python and the host's side; bwrap, whose runs it forks, stands on it.
  fork: [".", "host", "run"],
  process: [".", "host", "run"],
  bwrap: [".", "host", "run", "fork"],
  gvisor: [".", "host", "run"],
  container: [".", "host", "run"],
  packages: [".", "host", "run"],
};

function sandboxRoomOf(sandbox: string, file: string): string {
  const path = relative(sandbox, file);
  // The public entry is a room of its own, which no file of the sandbox imports.
  if (path === "index.ts") return "index";
  const parts = path.split("/");
  return parts.length === 1 ? "." : parts[0]!;
}

function crossRoomImports(sandbox: string): string[] {
  const problems: string[] = [];
  for (const file of sourceFiles(sandbox)) {
    const from = sandboxRoomOf(sandbox, file);
    // index.ts is the public entry: it puts the rooms together.
    if (from === "index") continue;
    for (const target of relativeImports(file)) {
      if (relative(sandbox, target).startsWith("..")) continue;
      const to = sandboxRoomOf(sandbox, target);
      const allowed = SANDBOX_MAY_IMPORT[from] ?? [];
      const ok = to === from || allowed.includes(to);
      if (!ok)
        problems.push(
          `${relative(sandbox, file)} -> ${relative(sandbox, target)} (${from} may import ${allowed.join(", ") || "only itself"})`,
        );
    }
  }
  return problems.sort();
}

describe("the rooms of src/sandbox/", () => {
  it("has no backend that imports another, no host or run file that imports a backend, and none that imports index.ts", () => {
    expect(crossRoomImports(join(SRC, "sandbox"))).toEqual([]);
  });

  it("knows every folder of src/sandbox/", () => {
    const folders = readdirSync(join(SRC, "sandbox"), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    expect(folders.filter((folder) => !(folder in SANDBOX_MAY_IMPORT))).toEqual([]);
  });

  it("reports a backend that borrows from another, and host code that reaches up", () => {
    const sandbox = scratchDir("sandbox-rooms");
    const write = (path: string, text: string) => writeSource(sandbox, path, text);
    write("types.ts", "export type Kind = string;\n");
    write("host/system-view.ts", `import { run } from "../run/run-child.js";\nexport const view = run;\n`);
    write("run/run-child.ts", `import type { Kind } from "../types.js";\nexport const run = 1;\n`);
    write("bwrap/backend.ts", `import { view } from "../host/system-view.js";\nexport const bwrap = view;\n`);
    write("gvisor/backend.ts", `import { bwrap } from "../bwrap/backend.js";\nimport { api } from "../index.js";\n`);
    write("index.ts", `export { bwrap } from "./bwrap/backend.js";\n`);
    expect(crossRoomImports(sandbox)).toEqual([
      "gvisor/backend.ts -> bwrap/backend.ts (gvisor may import ., host, run)",
      "gvisor/backend.ts -> index.ts (gvisor may import ., host, run)",
      "host/system-view.ts -> run/run-child.ts (host may import .)",
    ]);
  });
});

/**
 * The import circles among the files under `src`, type imports included, each as the files that
 * reach one another (a strongly connected component, Tarjan's): a circle inside a room is files
 * that cannot be read, or changed, apart.
 */
function importCircles(src: string): string[] {
  const imports = new Map(sourceFiles(src).map((file) => [file, relativeImports(file)]));
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const circles: string[] = [];
  const visit = (file: string) => {
    order.set(file, order.size);
    low.set(file, order.get(file)!);
    stack.push(file);
    for (const target of imports.get(file) ?? []) {
      if (!imports.has(target)) continue;
      if (!order.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (stack.includes(target)) {
        low.set(file, Math.min(low.get(file)!, order.get(target)!));
      }
    }
    if (low.get(file) !== order.get(file)) return;
    const members = stack.splice(stack.indexOf(file));
    if (members.length > 1)
      circles.push(
        members
          .map((member) => relative(src, member))
          .sort()
          .join(", "),
      );
  };
  for (const file of imports.keys()) if (!order.has(file)) visit(file);
  return circles.sort();
}

describe("the imports of src/", () => {
  it("go round in no circle, inside a room or across rooms", () => {
    expect(importCircles(SRC)).toEqual([]);
  });

  it("report each circle once, however long, as the files in it", () => {
    const src = scratchDir("circles");
    const write = (path: string, text: string) => writeSource(src, path, text);
    write("cli/commands/catalog.ts", `export const load = () => import("./run.js");\n`);
    write("cli/commands/run.ts", `import { summaryOf } from "./summary.js";\n`);
    write("cli/commands/summary.ts", `import type { load } from "./catalog.js";\n`);
    write("core/state.ts", `import { keep } from "./candidates.js";\n`);
    write("core/candidates.ts", `import type { State } from "./state.js";\n`);
    write("core/errors.ts", `export class E {}\n`);
    expect(importCircles(src)).toEqual([
      "cli/commands/catalog.ts, cli/commands/run.ts, cli/commands/summary.ts",
      "core/candidates.ts, core/state.ts",
    ]);
  });
});

describe("the layers of src/", () => {
  it("has no import from a folder to one above it, and the benchmark and CLI use only the public entries", () => {
    expect(backwardImports(SRC)).toEqual([]);
  });

  it("reports an import upwards, and a CLI or MCP file that reaches past the public entries", () => {
    const src = scratchDir("layers");
    const write = (path: string, text: string) => writeSource(src, path, text);
    write("core/state.ts", `import { critic } from "../nodes/critic.js";\nexport const state = critic;\n`);
    write("nodes/critic.ts", `import { state } from "../core/state.js";\nexport const critic = 1;\n`);
    write("cli/main.ts", `import { state } from "../core/state.js";\nimport { api } from "../index.js";\n`);
    write("index.ts", `export { state } from "./core/state.js";\n`);
    write("mcp/index.ts", `export { serve } from "./server.js";\n`);
    write("mcp/server.ts", `import { api } from "../index.js";\nimport { build } from "../graph/build.js";\n`);
    write(
      "cli/commands/mcp.ts",
      `import { serve } from "../../mcp/index.js";\nimport { x } from "../../mcp/server.js";\n`,
    );
    expect(backwardImports(src)).toEqual([
      "cli/commands/mcp.ts -> mcp/server.ts (cli may import entries)",
      "cli/main.ts -> core/state.ts (cli may import entries)",
      "core/state.ts -> nodes/critic.ts (core may import nothing outside itself)",
      "mcp/server.ts -> graph/build.ts (mcp may import entries)",
    ]);
  });

  it("knows every folder of src/, so a new folder gets a place in the layers", () => {
    const folders = readdirSync(SRC, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    expect(folders.filter((folder) => !(folder in MAY_IMPORT))).toEqual([]);
  });
});

describe("test/", () => {
  const TEST = resolve(import.meta.dirname, "..");
  const folders = (dir: string) =>
    readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);

  it("mirrors src/: each folder of tests is a room of src/, beside the helpers, the fixtures and the package's own", () => {
    const rooms = folders(SRC);
    expect(folders(TEST).filter((folder) => !rooms.includes(folder))).toEqual(["fixtures", "helpers", "package"]);
    expect(readdirSync(TEST).filter((name) => name.endsWith(".ts"))).toEqual([]);
  });
});
