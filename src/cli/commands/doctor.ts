import type { Command } from "commander";

import { createSandbox, type SandboxIsolation, type SandboxKind } from "../../index.js";
import { sandboxOption } from "../options.js";
import { EXIT } from "../stream-run.js";

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

export function registerDoctorCommand(program: Command): void {
  program
    .command("doctor")
    .description("say which sandbox would run code here and which of its limits hold for the whole run")
    .addOption(sandboxOption())
    .option("--json", "print JSON")
    .action(async (flags: { sandbox?: SandboxKind; json?: boolean }) => {
      const sandbox = createSandbox({ kind: flags.sandbox ?? "auto", prewarm: false });
      try {
        const isolation = sandbox.describe();
        process.stdout.write(flags.json ? `${JSON.stringify(isolation, null, 2)}\n` : formatIsolation(isolation));
      } finally {
        await sandbox.close();
      }
      process.exitCode = EXIT.passed;
    });
}
