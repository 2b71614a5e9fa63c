import type { Settings } from "../core/settings.js";
import type { AgentState, Note } from "../core/state.js";
import { PACKAGE_FINDINGS } from "../core/verdict.js";
import {
  allowedPackageFor,
  findPackageEntry,
  installPackages,
  missingModule,
  type PackageEntry,
  type PackageRequest,
} from "../sandbox/packages/installer.js";
import type { Language, RunHooks, RunRequest, RunResult, Sandbox } from "../sandbox/types.js";

export { PACKAGE_FINDINGS };

/** The `data` of an executor note about an install, so a later attempt need not try a failed one again. */
export interface PackageInstallNote {
  kind: "package-install";
  language: Language;
  packages: string[];
  key: string;
  ok: boolean;
  reason?: string;
  durationMs: number;
  /** Where the installer ran: in bwrap with the host's network, or on the host itself (no bwrap here). */
  place: "bwrap" | "host" | "cache";
}

export interface PackagedRun {
  result: RunResult;
  /** The specs installed during this attempt (the rerun that followed is not an attempt). */
  installed: string[];
  notes: Note[];
}

const STANDARD_LIBRARY: Record<Language, string> = {
  python: "Python's standard library",
  javascript: "Node's built-in modules",
};

/**
 * Runs the program with the language's allowed packages mounted when the cache has them. When it
 * fails to import an allowed package the cache lacks, installs the allowlist (the one step with
 * network; in a bwrap of its own where bwrap works) and runs the same program again, once: that
 * rerun is part of this attempt, not a new one. A package that is not allowed, cannot be mounted
 * or cannot be installed becomes a finding that tells the fixer to do without it.
 */
export async function runWithPackages(
  sandbox: Sandbox,
  given: RunRequest,
  context: { state: Pick<AgentState, "notes">; settings: Settings; attempt: number; hooks?: RunHooks },
): Promise<PackagedRun> {
  const { language } = given;
  const python = language === "python" ? context.settings.python : null;
  const request: RunRequest = python ? { ...given, python } : given;
  const allowed = context.settings.packages[language];
  const packages: PackageRequest = { language, specs: allowed, install: context.settings.packageInstall, python };
  const entry = allowed.length > 0 && sandbox.mountsPackages ? await findPackageEntry(packages) : null;
  const first = await sandbox.run(withPackages(request, entry), context.hooks);
  const module = missingModule(language, first);
  if (module === null) return { result: first, installed: [], notes: [] };
  const spec = allowedPackageFor(language, module, allowed);
  const plan = planInstall({ module, spec, allowed, sandbox, entry, state: context.state });
  if ("type" in plan) return finding(first, plan.type, `${plan.message}. ${doWithout(language)}`);
  return installAndRerun(sandbox, request, { ...context, ...plan, packages, module, firstRun: first });
}

/** What to install for the missing module, or why it cannot be had in this run. */
function planInstall(input: {
  module: string;
  spec: string | null;
  allowed: readonly string[];
  sandbox: Sandbox;
  entry: PackageEntry | null;
  state: Pick<AgentState, "notes">;
}): { type: (typeof PACKAGE_FINDINGS)[number]; message: string } | { spec: string; entry: PackageEntry } {
  const { module, spec, allowed, entry } = input;
  if (spec === null) {
    const list = allowed.length > 0 ? `only ${allowed.join(", ")} may be installed` : "no package may be installed";
    return { type: "PackageNotAvailable", message: `'${module}' is not available here: ${list}` };
  }
  if (!input.sandbox.mountsPackages || entry === null) {
    const message = `'${spec}' is allowed, but the ${input.sandbox.kind} sandbox cannot mount installed packages`;
    return { type: "PackageNotAvailable", message };
  }
  if (entry.ready) return { type: "PackageNotAvailable", message: notProvided(allowed, module) };
  const failedBefore = earlierFailure(input.state, entry.key);
  if (failedBefore === null) return { spec, entry };
  return { type: "PackageInstallFailed", message: `could not install ${spec} earlier in this run: ${failedBefore}` };
}

/** Installs the allowlist into its cache entry and runs the same program again, with it mounted. */
async function installAndRerun(
  sandbox: Sandbox,
  request: RunRequest,
  context: {
    attempt: number;
    hooks?: RunHooks;
    packages: PackageRequest;
    entry: PackageEntry;
    module: string;
    spec: string;
    firstRun: RunResult;
  },
): Promise<PackagedRun> {
  const { attempt, packages, entry, module, spec } = context;
  const { language } = request;
  const allowed = packages.specs.join(", ");
  const outcome = await installPackages(packages, entry);
  const data: PackageInstallNote = {
    kind: "package-install",
    language,
    packages: [...packages.specs],
    key: entry.key,
    ok: outcome.ok,
    durationMs: outcome.durationMs,
    place: outcome.place,
    ...(outcome.ok ? {} : { reason: outcome.reason }),
  };
  if (!outcome.ok) {
    const message = `could not install ${spec}: ${outcome.reason}. ${doWithout(language)}`;
    const note: Note = {
      source: "executor",
      attempt,
      message: `could not install ${allowed}: ${outcome.reason}`,
      data,
    };
    return { ...finding(context.firstRun, "PackageInstallFailed", message), notes: [note] };
  }
  const rerun = await sandbox.run(withPackages(request, outcome.entry), context.hooks);
  const where = outcome.place === "bwrap" ? "in bwrap with network" : "on the host";
  const note: Note = {
    source: "executor",
    attempt,
    message: `'${module}' was missing: installed ${allowed} (${where}) into ${outcome.entry.dir} and ran the same program again; the rerun is part of attempt ${attempt}, not a model attempt`,
    data,
  };
  const stillMissing = missingModule(language, rerun);
  const result =
    stillMissing === null
      ? rerun
      : finding(rerun, "PackageNotAvailable", `${notProvided(packages.specs, stillMissing)}. ${doWithout(language)}`)
          .result;
  return { result, installed: [...packages.specs], notes: [note] };
}

function withPackages(request: RunRequest, entry: PackageEntry | null): RunRequest {
  return entry?.ready ? { ...request, packagesDir: entry.dir } : request;
}

function doWithout(language: Language): string {
  return `Write the program without it, using ${STANDARD_LIBRARY[language]} only.`;
}

function notProvided(allowed: readonly string[], module: string): string {
  return `the installed packages (${allowed.join(", ")}) provide no module '${module}'`;
}

/** The run, with its import error replaced by a finding the fixer reads in place of a bare traceback. */
function finding(run: RunResult, type: (typeof PACKAGE_FINDINGS)[number], message: string): PackagedRun {
  const error = { type, message, line: run.error?.line ?? null, traceback: run.error?.traceback ?? "" };
  return { result: { ...run, error }, installed: [], notes: [] };
}

/** Why an install of this cache key failed earlier in the run, or null if none did. */
function earlierFailure(state: Pick<AgentState, "notes">, key: string): string | null {
  for (const note of state.notes) {
    const data = note.data as Partial<PackageInstallNote> | undefined;
    if (data?.kind === "package-install" && data.key === key && data.ok === false) return data.reason ?? "unknown";
  }
  return null;
}
