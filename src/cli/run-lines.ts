import { createSandbox, describeModelEndpoint, type SandboxKind, type Settings } from "../internal.js";
import { describeModelCalls, type ModelCallFlags } from "./options.js";

// The lines a run's progress opens with (its model, its sandbox) and the sandboxes' close: the
// commands that run programs use them, and they load the agent, so the others do not.

/**
 * Which model a run talks to and where, as the first line of its progress: a run that hangs
 * or fails on the wrong server is then obvious at a glance. Credentials in the URL are dropped.
 */
export function describeModel(
  settings: Pick<Settings, "model" | "fixerModel" | "criticModel">,
  options: { scripted: boolean },
  env: NodeJS.ProcessEnv = process.env,
): string {
  if (options.scripted) return `model ${settings.model} (scripted, no API key)`;
  const others = [
    settings.fixerModel && settings.fixerModel !== settings.model ? `fixer ${settings.fixerModel}` : "",
    settings.criticModel && settings.criticModel !== settings.model ? `critic ${settings.criticModel}` : "",
  ].filter(Boolean);
  return `model ${describeModelEndpoint(`${settings.model}${others.length ? ` (${others.join(", ")})` : ""}`, env)}`;
}

const LIMITS = ["memory", "processes", "cpu", "disk", "syscalls"] as const;

/**
 * The progress line that says which sandbox runs the programs (the one `auto` picked, too) and how
 * far its limits hold; `selfheal doctor` shows by what.
 */
export async function describeSandboxChoice(kind: SandboxKind): Promise<string> {
  const sandbox = createSandbox({ kind, prewarm: false });
  try {
    const isolation = sandbox.describe();
    const scoped = (scope: "run" | "process" | "none") => LIMITS.filter((name) => isolation[name].scope === scope);
    const [whole, perProcess, none] = [scoped("run"), scoped("process"), scoped("none")];
    const held = [
      whole.length > 0 ? `${whole.join(", ")} limited for the whole run` : "",
      perProcess.length > 0 ? `${perProcess.join(", ")} per process` : "",
      none.length > 0 ? `nothing limits ${none.join(", ")}` : "",
    ].filter(Boolean);
    return `sandbox ${isolation.kind}${kind === "auto" ? " (picked by auto)" : ""}: ${held.join("; ")}`;
  } finally {
    await sandbox.close();
  }
}

/** The progress lines that say where a run's model answers come from: the model and its server, or a recording. */
export function describeModelSource(
  settings: Pick<Settings, "model" | "fixerModel" | "criticModel">,
  flags: ModelCallFlags,
  options: { scripted: boolean },
): string[] {
  const calls = describeModelCalls(flags);
  if (flags.replay) return [calls!];
  return [describeModel(settings, options), ...(calls ? [calls] : [])];
}

/**
 * Closes sandboxes. Their idle interpreters are unreferenced, so while close() waits for them to
 * exit nothing else may hold the event loop open; without this timer Node can exit mid-close and
 * drop the exit code.
 */
export async function closeSandboxes(sandboxes: Iterable<{ close(): Promise<void> }>): Promise<void> {
  const keepAlive = setInterval(() => undefined, 1_000);
  try {
    await Promise.all([...sandboxes].map((sandbox) => sandbox.close()));
  } finally {
    clearInterval(keepAlive);
  }
}
