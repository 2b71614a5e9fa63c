import { isAbsolute, normalize, sep } from "node:path";
import { z } from "zod";

/**
 * The files a data task reads and writes: inputs the caller hands in, artifacts the program
 * leaves under `out/`. Declared here once; the sandbox moves the bytes, the state keeps only these.
 */

/** The folder under the work dir whose files come back as artifacts. */
export const ARTIFACTS_FOLDER = "out";

/** The normalised relative path, or null when `name` would land outside the work dir (`../x`, `/etc/x`). */
export function pathInsideWorkDir(name: string): string | null {
  const relative = normalize(name);
  if (name === "" || isAbsolute(relative) || relative === "." || relative === ".." || relative.startsWith(`..${sep}`)) {
    return null;
  }
  return relative;
}

/** One input file: read from a path on the host, or given as content. */
export const InputSourceSchema = z.union([
  z.object({ path: z.string().min(1, "an input path must not be empty") }).strict(),
  z.object({ content: z.string() }).strict(),
]);
export type InputSource = z.infer<typeof InputSourceSchema>;

/** Input files by the name the program opens them under, e.g. `{ "sales.csv": { path: "data/sales.csv" } }`. */
export const InputsSchema = z.record(
  z.string().refine((name) => pathInsideWorkDir(name) !== null, {
    error: (issue) => `an input name must be a relative path inside the work dir: ${JSON.stringify(issue.input)}`,
  }),
  InputSourceSchema,
);

/** Artifacts the task must produce, e.g. `["out/chart.png"]`. */
export const ExpectedArtifactsSchema = z.array(
  z.string().refine((name) => pathInsideWorkDir(name)?.startsWith(`${ARTIFACTS_FOLDER}${sep}`) === true, {
    error: (issue) => `expect: ${JSON.stringify(issue.input)} must name a file under ${ARTIFACTS_FOLDER}/`,
  }),
);

/** One file the program left under `out/`: what the state keeps of it (the bytes stay on disk). */
export const ArtifactFileSchema = z.object({
  /** Relative to the work dir, e.g. `out/chart.png`. */
  name: z.string(),
  bytes: z.number().int(),
  sha256: z.string(),
  mediaType: z.string(),
});
export type ArtifactFile = z.infer<typeof ArtifactFileSchema>;

/** What one run left under `out/`, and why anything was not collected. */
export const ArtifactCollectionSchema = z.object({
  /** The host folder the files were copied into (`<folder>/out/...`); null when they were not kept. */
  folder: z.string().nullable(),
  files: z.array(ArtifactFileSchema),
  /** One sentence per file or limit that kept something back: too many files, too many bytes, a symlink. */
  problems: z.array(z.string()),
});
export type ArtifactCollection = z.infer<typeof ArtifactCollectionSchema>;

const EXTENSION_MEDIA_TYPES: Record<string, string> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  svg: "image/svg+xml",
  webp: "image/webp",
  pdf: "application/pdf",
  csv: "text/csv",
  tsv: "text/tab-separated-values",
  json: "application/json",
  txt: "text/plain",
  md: "text/markdown",
  html: "text/html",
  xml: "application/xml",
  py: "text/x-python",
  js: "text/javascript",
  parquet: "application/vnd.apache.parquet",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  zip: "application/zip",
  gz: "application/gzip",
};

/** By the file's extension, which is what a chart or a CSV a program writes reliably carries. */
export function mediaTypeOf(name: string): string {
  const extension = name.toLowerCase().split(".").at(-1) ?? "";
  return (name.includes(".") && EXTENSION_MEDIA_TYPES[extension]) || "application/octet-stream";
}
