import type { Command } from "commander";

import {
  createSandbox,
  DATA_MODULES,
  defaultPython,
  describeModelEndpoint,
  findPythons,
  hasModelConfig,
  type PythonFound,
  type SandboxIsolation,
  type SandboxKind,
} from "../../index.js";
import { EXIT } from "../exit.js";
import { sandboxOption, settingDefaults } from "../options.js";
import { summaryOf } from "./catalog.js";

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

export function registerDoctorCommand(program: Command): void {
  program
    .command("doctor")
    .description(summaryOf("doctor"))
    .addOption(sandboxOption())
    .option("--json", "print JSON")
    .action(async (flags: { sandbox?: SandboxKind; json?: boolean }) => {
      const sandbox = createSandbox({ kind: flags.sandbox ?? "auto", prewarm: false });
      try {
        const isolation = sandbox.describe();
        const pythons = await findPythons();
        const byDefault = pythons.find((found) => found.source !== "system")?.executable;
        const model = {
          endpoint: describeModelEndpoint(settingDefaults().model),
          configured: hasModelConfig(),
        };
        process.stdout.write(
          flags.json
            ? `${JSON.stringify({ ...isolation, pythons, defaultPython: byDefault ?? null, model }, null, 2)}\n`
            : `${formatIsolation(isolation)}${formatPythons(pythons, byDefault)}${describeModelConfig()}`,
        );
      } finally {
        await sandbox.close();
      }
      process.exitCode = EXIT.passed;
    });
}
