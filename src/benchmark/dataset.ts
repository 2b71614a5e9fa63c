import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { z } from "zod";
import type { TaskHelpers } from "../internal.js";
import type { DatasetName } from "./names.js";

/** One HumanEval-format task, exactly the fields the JSONL carries. */
export const BenchmarkTaskSchema = z.object({
  task_id: z.string().min(1),
  /** Imports, helper functions, the signature and the docstring: what the model is shown. */
  prompt: z.string().min(1),
  /** The reference body that completes `prompt`. */
  canonical_solution: z.string().min(1),
  /** Defines `check(candidate)`; hidden from the model. */
  test: z.string().min(1),
  /** Name of the function `check` is called with. */
  entry_point: z.string().min(1),
});
export type BenchmarkTask = z.infer<typeof BenchmarkTaskSchema>;

/** The repository root, found from this file so the CLI works from any working directory. */
const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The datasets vendored in the repository (with their licences), so a bare clone can benchmark. */
export const DEFAULT_DATASET_DIR = resolve(REPO_ROOT, "datasets");

/** A dataset vendored in `datasets/`, picked with `--dataset NAME`. */
export interface NamedDataset {
  file: string;
  /** What bare numbers in `--tasks 0,5` stand for. */
  idPrefix: string;
  /**
   * Upstream bugs in a hidden test, fixed when the file is read (the vendored file stays as
   * published). Each is an exact text replacement; one that no longer matches is an error.
   */
  testFixes?: Record<string, { find: string; replace: string; why: string }>;
}

export const NAMED_DATASETS: Record<string, NamedDataset> = {
  humaneval: { file: "humaneval.jsonl.gz", idPrefix: "HumanEval/" },
  humanevalplus: {
    file: "humanevalplus.jsonl.gz",
    idPrefix: "HumanEval/",
    testFixes: {
      "HumanEval/32": {
        find: "assert _poly(*candidate(*inp), inp) <= 0.0001",
        replace: "assert abs(_poly(*inp, candidate(*inp))) <= 0.0001",
        why: "the published check passes _poly its arguments in the wrong order and fails every program (TypeError)",
      },
    },
  },
  mbppplus: {
    file: "mbppplus.jsonl.gz",
    idPrefix: "Mbpp/",
    // Three regex tasks whose published assertion helper computes its verdict and never asserts it.
    testFixes: Object.fromEntries(
      ["Mbpp/737", "Mbpp/787", "Mbpp/794"].map((id) => [
        id,
        {
          find: "        exact_match = exp == (out is not None)\n",
          replace:
            '        exact_match = exp == (out is not None)\n    assert exact_match, f"out: {out}, exp: {exp}"\n',
          why: "the assertion helper computes exact_match and never asserts it, so the tests accept any program",
        },
      ]),
    ),
  },
} satisfies Record<DatasetName, NamedDataset>;

export interface DatasetLocation {
  /** A name from NAMED_DATASETS (`humaneval` by default) or a path to a `.jsonl` / `.jsonl.gz` file. */
  dataset?: string;
  /** Where named datasets live; defaults to the repository's `datasets/`. */
  datasetDir?: string;
}

/** Turns a dataset name or path into an absolute file path. */
export function resolveDatasetPath({ dataset = "humaneval", datasetDir }: DatasetLocation = {}): string {
  const bundled = NAMED_DATASETS[dataset];
  if (bundled !== undefined) {
    return resolve(datasetDir ?? process.env.SELFHEAL_DATASET_DIR ?? DEFAULT_DATASET_DIR, bundled.file);
  }
  return resolve(dataset);
}

const GZIP_MAGIC = [0x1f, 0x8b] as const;

/** Gzip is detected by its magic bytes, not the file name, so a renamed file still loads. */
export function decodeDatasetBytes(bytes: Uint8Array): string {
  const isGzip = bytes.length >= 2 && bytes[0] === GZIP_MAGIC[0] && bytes[1] === GZIP_MAGIC[1];
  const raw = isGzip ? gunzipSync(bytes) : Buffer.from(bytes);
  return raw.toString("utf8");
}

export class DatasetError extends Error {
  override readonly name = "DatasetError";
}

/**
 * Parses HumanEval JSONL text. Every problem is reported with the source and 1-based line
 * number, because a user bringing their own tasks needs to know which row to fix.
 */
export function parseDatasetText(text: string, source = "dataset"): BenchmarkTask[] {
  const tasks: BenchmarkTask[] = [];
  const seen = new Set<string>();
  const lines = text.split(/\r?\n/);
  lines.forEach((line, index) => {
    const lineNumber = index + 1;
    if (line.trim() === "") return;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch (error) {
      throw new DatasetError(`${source}:${lineNumber}: not valid JSON (${(error as Error).message})`);
    }
    const parsed = BenchmarkTaskSchema.safeParse(json);
    if (!parsed.success) {
      const problems = parsed.error.issues
        .map((issue) => `${issue.path.join(".") || "(row)"}: ${issue.message}`)
        .join("; ");
      throw new DatasetError(`${source}:${lineNumber}: not a HumanEval task (${problems})`);
    }
    if (seen.has(parsed.data.task_id)) {
      throw new DatasetError(`${source}:${lineNumber}: duplicate task_id ${parsed.data.task_id}`);
    }
    seen.add(parsed.data.task_id);
    tasks.push(parsed.data);
  });
  if (tasks.length === 0) throw new DatasetError(`${source}: contains no tasks`);
  return tasks;
}

export interface TaskFilter {
  /** Keep only these task ids, in dataset order; an unknown id is an error, not a silent skip. */
  taskIds?: readonly string[];
  /** Keep the first N tasks (after `taskIds`). */
  limit?: number;
}

export function filterTasks(tasks: readonly BenchmarkTask[], { taskIds, limit }: TaskFilter = {}): BenchmarkTask[] {
  let selected = [...tasks];
  if (taskIds !== undefined && taskIds.length > 0) {
    const known = new Set(tasks.map((task) => task.task_id));
    const unknown = taskIds.filter((id) => !known.has(id));
    if (unknown.length > 0) throw new DatasetError(`unknown task id(s): ${unknown.join(", ")}`);
    const wanted = new Set(taskIds);
    selected = selected.filter((task) => wanted.has(task.task_id));
  }
  if (limit !== undefined) {
    if (!Number.isInteger(limit) || limit < 1) throw new DatasetError(`limit must be a positive integer, got ${limit}`);
    selected = selected.slice(0, limit);
  }
  return selected;
}

/** `"HumanEval/0, HumanEval/1"` -> ids; bare numbers are shorthand for the dataset's ids (`HumanEval/N`, `Mbpp/N`). */
export function parseTaskIds(list: string, dataset = "humaneval"): string[] {
  const prefix = NAMED_DATASETS[dataset]?.idPrefix ?? "HumanEval/";
  return list
    .split(",")
    .map((id) => id.trim())
    .filter((id) => id !== "")
    .map((id) => (/^\d+$/.test(id) ? `${prefix}${id}` : id));
}

/** Applies a named dataset's declared fixes to its hidden tests. */
function applyTestFixes(tasks: BenchmarkTask[], named: NamedDataset | undefined, source: string): BenchmarkTask[] {
  const fixes = named?.testFixes ?? {};
  return tasks.map((task) => {
    const fix = fixes[task.task_id];
    if (fix === undefined) return task;
    if (task.test.split(fix.find).length !== 2) {
      throw new DatasetError(`${source}: the declared fix for ${task.task_id} no longer matches its test exactly once`);
    }
    return { ...task, test: task.test.replace(fix.find, fix.replace) };
  });
}

export interface LoadDatasetOptions extends DatasetLocation, TaskFilter {}

/** Reads, decodes, validates and filters a dataset. */
export async function loadDataset(options: LoadDatasetOptions = {}): Promise<BenchmarkTask[]> {
  const path = resolveDatasetPath(options);
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    throw new DatasetError(`cannot read dataset ${path}: ${(error as Error).message}`);
  }
  const tasks = applyTestFixes(
    parseDatasetText(decodeDatasetBytes(bytes), path),
    NAMED_DATASETS[options.dataset ?? "humaneval"],
    path,
  );
  return filterTasks(tasks, options);
}

/**
 * The program the judge runs: HumanEval's own rule, prompt + completion + tests + check call.
 * `completion` is a body that continues `prompt` (as `canonical_solution` does).
 */
export function buildCheckProgram(task: BenchmarkTask, completion: string): string {
  return `${task.prompt}${completion}\n${task.test}\ncheck(${task.entry_point})\n`;
}

/** The hidden tests as a run's `tests`: appended after a full candidate program. */
/**
 * What the hidden tests take from the task rather than from the program: the prompt's own
 * definitions (HumanEval/32's check calls its `poly`), without the function the program writes.
 */
export function taskHelpers(task: BenchmarkTask): TaskHelpers {
  return { source: task.prompt, omit: [task.entry_point] };
}

export function buildHiddenTests(task: BenchmarkTask): string {
  return `${task.test}\ncheck(${task.entry_point})\n`;
}
