import { execFile } from "node:child_process";
import { accessSync, constants as fsConstants, realpathSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, delimiter, dirname, join } from "node:path";
import { promisify } from "node:util";
import { SandboxUnavailableError } from "../../core/errors.js";

import type { Language } from "../types.js";

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

const cached = new Map<string, Promise<Interpreters>>();

/** The Python that runs programs when a run names none: `$SELFHEAL_PYTHON`, else python3 on PATH. */
export function defaultPython(env: NodeJS.ProcessEnv = process.env): string {
  return env.SELFHEAL_PYTHON?.trim() || "python3";
}

/**
 * Finds the Python (`python`: a path, or a command looked up on PATH; default `defaultPython()`)
 * and node once per process and choice. A pyenv shim is a bash script that costs tens of
 * milliseconds per call and reads the host's home directory, so we ask Python itself where its
 * binary lives and run that directly.
 */
export function resolveInterpreters(python?: string | null): Promise<Interpreters> {
  const choice = python || defaultPython();
  let found = cached.get(choice);
  if (!found) {
    found = Promise.all([resolvePython(choice), resolveNode()]).then(([python, javascript]) => ({
      python,
      javascript,
    }));
    cached.set(choice, found);
  }
  return found;
}

/** A path as given (relative to the working directory), a bare name looked up on PATH. */
function locate(command: string): string | null {
  if (!command.includes("/")) return findOnPath(command);
  try {
    accessSync(command, fsConstants.X_OK);
    return command;
  } catch {
    return null;
  }
}

const WHERE_AM_I =
  "import json, sys; print(json.dumps([sys.executable, sys.prefix, sys.base_prefix, sys.version.split()[0]]))";

async function resolvePython(command: string): Promise<Interpreter | null> {
  const onPath = locate(command);
  if (!onPath) return null;
  try {
    const { stdout } = await execFileAsync(onPath, ["-I", "-c", WHERE_AM_I], {
      timeout: 15_000,
      env: { PATH: process.env.PATH ?? "" },
    });
    const [executable, prefix, basePrefix] = JSON.parse(stdout) as [string, string, string];
    // A virtual environment is one only when started through its own bin/python (which finds its
    // pyvenv.cfg); its real binary would start the base Python, without the venv's packages.
    const inVenv = realpathSync(prefix) !== realpathSync(basePrefix);
    return {
      executable: inVenv ? executable : realpathSync(executable),
      prefixes: unique([realpathSync(basePrefix), realpathSync(prefix)]),
    };
  } catch {
    return null;
  }
}

/** The modules a data task's files suggest, checked in each Python that `doctor` and `run` consider. */
export const DATA_MODULES = ["numpy", "pandas", "matplotlib"] as const;

/** One Python on this host, as `selfheal doctor` shows it. */
export interface PythonFound {
  /** How it was found: `python3 on PATH`, `$SELFHEAL_PYTHON`, a well-known path. */
  source: string;
  /** The binary that runs programs. */
  executable: string;
  version: string;
  /** Each module asked about: true when `import` succeeds in this interpreter. */
  modules: Record<string, boolean>;
}

/**
 * Asks one Python its binary and version, and which of `modules` import (really imported, in a
 * child of its own, so a broken install counts as missing). Null when it does not start.
 */
export async function probePython(
  command: string,
  modules: readonly string[] = DATA_MODULES,
  source = command,
): Promise<PythonFound | null> {
  const resolved = await resolvePython(command);
  if (!resolved) return null;
  const script = [
    "import importlib, json, sys",
    "found = {}",
    `for name in ${JSON.stringify(modules)}:`,
    "    try:",
    "        importlib.import_module(name)",
    "        found[name] = True",
    "    except Exception:",
    "        found[name] = False",
    "print(json.dumps([sys.version.split()[0], found]))",
  ].join("\n");
  // matplotlib writes its font cache on import: a throwaway folder keeps the user's untouched.
  const scratch = await mkdtemp(join(tmpdir(), "selfheal-python-probe-"));
  try {
    const { stdout } = await execFileAsync(resolved.executable, ["-I", "-c", script], {
      timeout: 60_000,
      env: { PATH: process.env.PATH ?? "", HOME: scratch, MPLBACKEND: "Agg", MPLCONFIGDIR: scratch },
    });
    const [version, found] = JSON.parse(stdout.trim().split("\n").at(-1) ?? "") as [string, Record<string, boolean>];
    return { source, executable: resolved.executable, version, modules: found };
  } catch {
    return null;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * Every Python worth offering here, the default first: `$SELFHEAL_PYTHON`, each python3 on PATH,
 * and the system's own (Debian and Homebrew keep theirs at fixed paths), each binary once.
 */
export async function findPythons(
  modules: readonly string[] = DATA_MODULES,
  env: NodeJS.ProcessEnv = process.env,
): Promise<PythonFound[]> {
  const candidates: Array<[string, string]> = [];
  if (env.SELFHEAL_PYTHON?.trim()) candidates.push([env.SELFHEAL_PYTHON.trim(), "$SELFHEAL_PYTHON"]);
  for (const directory of (env.PATH ?? "").split(delimiter)) {
    if (directory) candidates.push([join(directory, "python3"), "python3 on PATH"]);
  }
  for (const path of ["/usr/bin/python3", "/usr/local/bin/python3", "/opt/homebrew/bin/python3"]) {
    candidates.push([path, "system"]);
  }
  // /bin/python3 and /usr/bin/python3 are one file where /bin links to /usr/bin: asked once. The
  // folder is resolved, not the file, which in a venv links to its base Python but is not it.
  const distinct = new Map<string, [string, string]>();
  for (const [command, source] of candidates) {
    const found = locate(command);
    const key = found && join(realpathSync(dirname(found)), basename(found));
    if (key && !distinct.has(key)) distinct.set(key, [command, source]);
  }
  const probed = await Promise.all(
    [...distinct.values()].map(([command, source]) => probePython(command, modules, source)),
  );
  const seen = new Set<string>();
  return probed.filter((found): found is PythonFound => {
    if (!found || seen.has(found.executable)) return false;
    seen.add(found.executable);
    return true;
  });
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
