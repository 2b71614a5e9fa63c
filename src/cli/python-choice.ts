import {
  DATA_MODULES,
  defaultPython,
  findPythons,
  type PythonFound,
  probePython,
  type RunInput,
  type Settings,
} from "../internal.js";

/** Input files a tabular reader opens, by extension; pandas is what a model reaches for. */
const TABULAR = /\.(csv|tsv|xlsx?|parquet|json)$/i;
/** Artifacts a plotting library draws. */
const PLOTS = /\.(png|jpe?g|svg|pdf)$/i;

/** The modules a data task's files suggest its program will import: pandas for tables in, matplotlib for a chart out. */
export function modulesSuggested(input: Pick<RunInput, "inputs" | "expect">): string[] {
  const suggested = new Set<string>();
  if (Object.keys(input.inputs ?? {}).some((name) => TABULAR.test(name))) suggested.add("pandas");
  if ((input.expect ?? []).some((name) => PLOTS.test(name))) suggested.add("matplotlib");
  return DATA_MODULES.filter((name) => suggested.has(name));
}

export interface PythonChoice {
  /** The interpreter to store in the run's settings; null leaves the default. */
  python: string | null;
  /** One line for the progress: which Python runs programs, and why that one. */
  note: string;
  /** Set when no Python here has what the task suggests: what the user can do. */
  warning?: string;
  /** Set when the Python does not start at all: no program could run, so the run must not begin. */
  broken?: string;
}

const missingIn = (found: PythonFound, modules: readonly string[]) => modules.filter((name) => !found.modules[name]);

const describe = (found: PythonFound) => `python ${found.executable} (${found.version})`;

/** What a user can do about a module the Python lacks; the same words as the missing-module hint. */
export function missingModuleAdvice(modules: readonly string[]): string {
  return `install ${modules.join(" and ")} for it, choose another interpreter with --python or $SELFHEAL_PYTHON (\`selfheal doctor\` lists them), or let the run install ${modules.length === 1 ? "it" : "them"} with --allow-package ${modules.join(" ")}`;
}

/**
 * Which Python runs a Python task's programs. A Python the user named is used as named (with a
 * warning when it lacks what the task's files suggest); otherwise the default is kept when it has
 * those modules, else the first Python found that has them all is chosen, and the note says why.
 */
export async function choosePython(
  settings: Pick<Settings, "python">,
  suggested: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<PythonChoice> {
  const named = settings.python ?? (env.SELFHEAL_PYTHON?.trim() || null);
  const command = named ?? defaultPython(env);
  const first = await probePython(command, suggested);
  if (!first) {
    return {
      python: settings.python,
      note: `python: ${command} does not start`,
      broken: `python: ${command} does not start, so Python programs cannot run: install Python 3, or name one with --python or $SELFHEAL_PYTHON (\`selfheal doctor\` lists those found)`,
    };
  }
  const lacking = missingIn(first, suggested);
  if (lacking.length === 0) return { python: settings.python, note: describe(first) };
  const why = `${lacking.join(", ")}, which the task's files suggest`;
  if (named) {
    return {
      python: settings.python,
      note: describe(first),
      warning: `${first.executable} lacks ${why}: ${missingModuleAdvice(lacking)}`,
    };
  }
  const better = (await findPythons(suggested, env)).find((found) => missingIn(found, suggested).length === 0);
  if (!better) {
    return {
      python: null,
      note: describe(first),
      warning: `no Python found here has ${suggested.join(", ")}, which the task's files suggest (python3 on PATH is ${first.executable}): ${missingModuleAdvice(lacking)}`,
    };
  }
  return {
    python: better.executable,
    note: `${describe(better)}: it has ${suggested.join(", ")}, which the task's files suggest; python3 on PATH (${first.executable}) lacks ${lacking.join(", ")} (choose with --python or $SELFHEAL_PYTHON)`,
  };
}
