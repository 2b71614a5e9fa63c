import {
  checkSandbox,
  createSandbox,
  DATA_MODULES,
  defaultPython,
  describeModelEndpoint,
  findPythons,
  hasModelConfig,
  LANGUAGES,
  type PythonFound,
  probePython,
  type SandboxIsolation,
  type SandboxKind,
} from "../../internal.js";
import { settingDefaults } from "../../names.js";
import { EXIT } from "../exit.js";

const LIMITS = ["memory", "processes", "cpu", "disk", "syscalls"] as const;
const SCOPE_WORDS = { run: "whole run", process: "per process", none: "none" } as const;

/** The table `selfheal doctor` prints: one line per limit, how far it holds and by what. */
export function formatIsolation(isolation: SandboxIsolation): string {
  const lines = [`sandbox: ${isolation.kind}`];
  for (const name of LIMITS) {
    const { scope, by } = isolation[name];
    lines.push(`  ${name.padEnd(9)}  ${SCOPE_WORDS[scope].padEnd(11)}  ${by}`);
  }
  for (const note of isolation.notes) lines.push(`  note: ${note}`);
  if (isolation.start) {
    const forked = isolation.start.forked.length > 0 ? `forked (${isolation.start.forked.join(", ")})` : "cold";
    lines.push(`  start: ${forked}: ${isolation.start.by}`);
  }
  return `${lines.join("\n")}\n`;
}

/** Each Python found, the one that runs programs by default marked `*`, with the data modules that import in it. */
export function formatPythons(pythons: readonly PythonFound[], defaultExecutable: string | undefined): string {
  const lines = [`python (runs programs; default ${defaultPython()}, or $SELFHEAL_PYTHON, or --python PATH):`];
  if (pythons.length === 0) lines.push("  none found: Python programs cannot run here; install Python 3");
  for (const found of pythons) {
    const mark = found.executable === defaultExecutable ? "*" : " ";
    const modules = DATA_MODULES.map((name) => `${name} ${found.modules[name] ? "yes" : "no"}`).join("  ");
    lines.push(`  ${mark} ${found.executable}  ${found.version}  (${found.source})  ${modules}`);
  }
  return `${lines.join("\n")}\n`;
}

/** Where runs send their model calls, from the environment, as `run` shows it. */
export function describeModelConfig(env: NodeJS.ProcessEnv = process.env): string {
  const endpoint = describeModelEndpoint(settingDefaults().model, env);
  return hasModelConfig(env)
    ? `model: ${endpoint}\n`
    : `model: ${endpoint}, but neither OPENAI_API_KEY nor OPENAI_BASE_URL is set: \`selfheal run\` needs one (\`selfheal demo\` does not)\n`;
}

/**
 * What would stop a run before its first program: the sandbox cannot run here, a container engine
 * has no image for a language, or the Python that runs programs does not start. `run` refuses these
 * with one line before any model call; doctor lists them all.
 */
async function problemsOf(kind: SandboxKind, env: NodeJS.ProcessEnv = process.env): Promise<string[]> {
  const problems: string[] = [];
  try {
    await checkSandbox({ kind, languages: kind === "container" ? LANGUAGES : [] });
  } catch (error) {
    problems.push(error instanceof Error ? error.message : String(error));
  }
  const python = env.SELFHEAL_PYTHON?.trim() || defaultPython(env);
  if (kind !== "container" && !(await probePython(python, []))) {
    problems.push(
      `python: ${python} does not start, so Python programs cannot run: install Python 3, or name one with --python or $SELFHEAL_PYTHON`,
    );
  }
  return problems;
}

/** `selfheal doctor`'s work, once its flags are read (doctor-command.ts declares them). */
export async function runDoctor(flags: { sandbox?: SandboxKind; json?: boolean }): Promise<void> {
  const sandbox = createSandbox({ kind: flags.sandbox ?? "auto", prewarm: false });
  try {
    const isolation = sandbox.describe();
    const pythons = await findPythons();
    const byDefault = pythons.find((found) => found.source !== "system")?.executable;
    const model = {
      endpoint: describeModelEndpoint(settingDefaults().model),
      configured: hasModelConfig(),
    };
    const problems = await problemsOf(flags.sandbox ?? "auto");
    const verdict =
      problems.length === 0
        ? "ready: nothing stops a run here\n"
        : `not ready:\n${problems.map((problem) => `  - ${problem}\n`).join("")}`;
    process.stdout.write(
      flags.json
        ? `${JSON.stringify({ ...isolation, pythons, defaultPython: byDefault ?? null, model, problems }, null, 2)}\n`
        : `${formatIsolation(isolation)}${formatPythons(pythons, byDefault)}${describeModelConfig()}${verdict}`,
    );
    // A script can ask `selfheal doctor` whether runs can start here.
    process.exitCode = problems.length === 0 ? EXIT.passed : EXIT.failed;
  } finally {
    await sandbox.close();
  }
}
