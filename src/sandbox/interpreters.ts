import { execFile } from "node:child_process";
import { accessSync, constants as fsConstants, realpathSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { promisify } from "node:util";
import { SandboxUnavailableError } from "../core/errors.js";

import type { Language } from "./types.js";

const execFileAsync = promisify(execFile);

/** A language runtime on this host, resolved to the real binary (not a pyenv or nvm shim). */
export interface Interpreter {
  executable: string;
  /** Installation prefixes the interpreter needs at run time, for bind mounts. */
  prefixes: string[];
}

export type Interpreters = Record<Language, Interpreter | null>;

/** No usable interpreter for the language on this host; the run is reported as `unavailable`. */
export class InterpreterMissingError extends SandboxUnavailableError {
  constructor(readonly language: Language) {
    super(`${language === "python" ? "python3" : "node"} was not found on PATH, so ${language} code cannot run here`);
  }
}

let cached: Promise<Interpreters> | undefined;

/**
 * Finds python3 and node once per process. A pyenv shim is a bash script that costs tens of
 * milliseconds per call and reads the host's home directory, so we ask Python itself where its
 * binary lives and run that directly.
 */
export function resolveInterpreters(): Promise<Interpreters> {
  cached ??= Promise.all([resolvePython(), resolveNode()]).then(([python, javascript]) => ({ python, javascript }));
  return cached;
}

async function resolvePython(): Promise<Interpreter | null> {
  const onPath = findOnPath("python3");
  if (!onPath) return null;
  try {
    const { stdout } = await execFileAsync(
      onPath,
      ["-I", "-c", "import json, sys; print(json.dumps([sys.executable, sys.prefix, sys.base_prefix]))"],
      { timeout: 15_000, env: { PATH: process.env.PATH ?? "" } },
    );
    const [executable, prefix, basePrefix] = JSON.parse(stdout) as [string, string, string];
    return { executable: realpathSync(executable), prefixes: unique([realpathSync(basePrefix), realpathSync(prefix)]) };
  } catch {
    return null;
  }
}

async function resolveNode(): Promise<Interpreter | null> {
  const onPath = findOnPath("node");
  // The node running selfheal is a safe fallback: it exists and its version is known to work.
  const executable = realpathSync(onPath ?? process.execPath);
  return { executable, prefixes: [dirname(dirname(executable))] };
}

export function findOnPath(command: string, searchPath: string = process.env.PATH ?? ""): string | null {
  for (const directory of searchPath.split(delimiter)) {
    if (!directory) continue;
    const candidate = join(directory, command);
    try {
      accessSync(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // not here; keep looking
    }
  }
  return null;
}

function unique(items: string[]): string[] {
  return [...new Set(items)];
}
