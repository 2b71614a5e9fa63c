/**
 * How long the CLI takes to start, side by side with a bare `node -e 0`: `--version`, `--help`, a
 * usage error and `runs` over a store holding a few runs (the demo, run first, not timed). Each
 * command runs `--repeat` times in turn; the table shows the median and its ratio to bare Node.
 * Targets (issue 38): every command that opens no store within 2x a bare Node start, a usage error
 * included, and `runs` on a small store under 500 ms. Asserts nothing.
 *
 *   npm run bench:cli [-- --repeat 9]
 *
 * In a checkout bin/selfheal.js runs dist/ when it was built from the current src/ (`npm run
 * build`), else the source through tsx; the first line says which this run measured.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const { values } = parseArgs({ options: { repeat: { type: "string", default: "7" } } });
const REPEAT = Number(values.repeat);
const BIN = fileURLToPath(new URL("../bin/selfheal.js", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "selfheal-bench-cli-"));
const db = join(dir, "runs.db");
const env = { ...process.env, NO_COLOR: "1" };

interface Contender {
  name: string;
  argv: string[];
  /** The most this may take: a factor of bare Node's median, or milliseconds. */
  target?: { timesNode: number } | { ms: number };
}

const contenders: Contender[] = [
  { name: "node -e 0", argv: ["-e", "0"] },
  { name: "selfheal --version", argv: [BIN, "--version"], target: { timesNode: 2 } },
  { name: "selfheal --help", argv: [BIN, "--help"], target: { timesNode: 2 } },
  { name: "selfheal run (usage error)", argv: [BIN, "run"], target: { timesNode: 2 } },
  { name: "selfheal run --help", argv: [BIN, "run", "--help"], target: { timesNode: 2 } },
  // The other commands' usage errors: each must be found before the command's work loads.
  ...[
    ["resume"],
    ["history"],
    ["runs", "--limit", "0"],
    ["report"],
    ["submit", "x", "--priority", "1.5"],
    ["worker", "--concurrency", "0"],
    ["cancel"],
    ["demo", "--sandbox", "nowhere"],
    ["bench", "--strategy", "guess"],
    ["doctor", "--bogus"],
    ["mcp", "--port", "x"],
  ].map((argv) => ({
    name: `selfheal ${argv[0]} (usage error)`,
    argv: [BIN, ...argv],
    target: { timesNode: 2 } as const,
  })),
  { name: "selfheal runs (3 runs stored)", argv: [BIN, "runs", "--db", db], target: { ms: 500 } },
];

function timeOnce(argv: string[]): number {
  const started = performance.now();
  const result = spawnSync(process.execPath, argv, { env, cwd: dir, encoding: "utf8" });
  const elapsed = performance.now() - started;
  if (result.error) throw result.error;
  return elapsed;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

function which(): string {
  const stamp = join(fileURLToPath(new URL("../dist", import.meta.url)), ".built-from-src");
  if (!existsSync(fileURLToPath(new URL("../src", import.meta.url)))) return "dist/ (installed package)";
  return existsSync(stamp)
    ? `dist/ if built from the current src/ (stamp ${statSync(stamp).mtime.toISOString()}), else src/ through tsx`
    : "src/ through tsx (no dist/ build)";
}

try {
  for (let run = 0; run < 3; run++) {
    const demo = spawnSync(process.execPath, [BIN, "demo", "--db", db, "--sandbox", "process"], { env, cwd: dir });
    if (demo.status !== 0) throw new Error(`the demo failed: ${demo.stderr}`);
  }
  console.log(
    `${cpus().length} CPUs, load average ${loadavg()
      .map((value) => value.toFixed(2))
      .join(" ")}; ${REPEAT} runs each`,
  );
  console.log(`bin/selfheal.js runs ${which()}`);
  // One warm-up each (the file cache), then the commands in turn, so load shifts hit them alike.
  for (const contender of contenders) timeOnce(contender.argv);
  const times = contenders.map(() => [] as number[]);
  for (let round = 0; round < REPEAT; round++) {
    for (const [index, contender] of contenders.entries()) times[index]!.push(timeOnce(contender.argv));
  }
  const node = median(times[0]!);
  const rows = contenders.map((contender, index) => {
    const ms = median(times[index]!);
    const target = contender.target;
    const goal = !target ? "" : "timesNode" in target ? `<= ${target.timesNode}x node` : `< ${target.ms} ms`;
    const met = !target ? "" : "timesNode" in target ? ms <= target.timesNode * node : ms < target.ms;
    return [contender.name, ms.toFixed(0), (ms / node).toFixed(2), goal, met === "" ? "" : met ? "met" : "NOT met"];
  });
  const header = ["command", "median ms", "x node", "target", ""];
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  for (const row of [header, ...rows])
    console.log(
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join("  ")
        .trimEnd(),
    );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
