import type { Settings } from "../core/settings.js";
import type { AgentState, Note } from "../core/state.js";
import {
  allowedPackageFor,
  findPackageEntry,
  installPackages,
  missingModule,
  type PackageEntry,
  type PackageRequest,
} from "../sandbox/packages.js";
import type { Language, RunHooks, RunRequest, RunResult, Sandbox } from "../sandbox/types.js";

/** Failure types the executor writes for a missing package; the critic hands their message to the fixer as it is. */
export const PACKAGE_FINDINGS = ["PackageNotAvailable", "PackageInstallFailed"] as const;

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
 * fails to import an allowed package the cache lacks, installs the allowlist (with network, outside
 * the sandbox) and runs the same program again, once: that rerun is part of this attempt, not a new
 * one. A package that is not allowed, cannot be mounted or cannot be installed becomes a finding
 * that tells the fixer to do without it.
 */
export async function runWithPackages(
  sandbox: Sandbox,
  request: RunRequest,
  context: { state: AgentState; settings: Settings; attempt: number; hooks?: RunHooks },
): Promise<PackagedRun> {
  const { state, settings, attempt } = context;
  const language = request.language;
  const allowed = settings.packages[language];
  const packageRequest: PackageRequest = { language, specs: allowed, install: settings.packageInstall };
  const entry = allowed.length > 0 && sandbox.mountsPackages ? await findPackageEntry(packageRequest) : null;
  const mounted = (dir: PackageEntry | null): RunRequest =>
    dir?.ready ? { ...request, packagesDir: dir.dir } : request;

  const first = await sandbox.run(mounted(entry), context.hooks);
  const module = missingModule(language, first);
  if (module === null) return { result: first, installed: [], notes: [] };
  const spec = allowedPackageFor(language, module, allowed);
  const without = `Write the program without it, using ${STANDARD_LIBRARY[language]} only.`;
  if (spec === null) {
    const list = allowed.length > 0 ? `only ${allowed.join(", ")} may be installed` : "no package may be installed";
    return finding(first, "PackageNotAvailable", `'${module}' is not available here: ${list}. ${without}`);
  }
  if (!sandbox.mountsPackages || entry === null) {
    return finding(
      first,
      "PackageNotAvailable",
      `'${spec}' is allowed, but the ${sandbox.kind} sandbox cannot mount installed packages. ${without}`,
    );
  }
  if (entry.ready) {
    return finding(
      first,
      "PackageNotAvailable",
      `the installed packages (${allowed.join(", ")}) provide no module '${module}'. ${without}`,
    );
  }
  const failedBefore = earlierFailure(state, entry.key);
  if (failedBefore !== null) {
    return finding(
      first,
      "PackageInstallFailed",
      `could not install ${spec} earlier in this run: ${failedBefore}. ${without}`,
    );
  }

  const outcome = await installPackages(packageRequest, entry);
  const data: PackageInstallNote = {
    kind: "package-install",
    language,
    packages: [...allowed],
    key: entry.key,
    ok: outcome.ok,
    durationMs: outcome.durationMs,
    place: outcome.place,
    ...(outcome.ok ? {} : { reason: outcome.reason }),
  };
  if (!outcome.ok) {
    const note = {
      source: "executor",
      attempt,
      message: `could not install ${allowed.join(", ")}: ${outcome.reason}`,
      data,
    };
    const failed = finding(first, "PackageInstallFailed", `could not install ${spec}: ${outcome.reason}. ${without}`);
    return { ...failed, notes: [note] };
  }
  const rerun = await sandbox.run(mounted(outcome.entry), context.hooks);
  const note: Note = {
    source: "executor",
    attempt,
    message: `'${module}' was missing: installed ${allowed.join(", ")} (${outcome.place === "bwrap" ? "in bwrap with network" : "on the host"}) into ${outcome.entry.dir} and ran the same program again; the rerun is part of attempt ${attempt}, not a model attempt`,
    data,
  };
  const stillMissing = missingModule(language, rerun);
  const result =
    stillMissing === null
      ? rerun
      : finding(
          rerun,
          "PackageNotAvailable",
          `the installed packages (${allowed.join(", ")}) provide no module '${stillMissing}'. ${without}`,
        ).result;
  return { result, installed: [...allowed], notes: [note] };
}

/** The run, with its import error replaced by a finding the fixer reads in place of a bare traceback. */
function finding(run: RunResult, type: (typeof PACKAGE_FINDINGS)[number], message: string): PackagedRun {
  const error = { type, message, line: run.error?.line ?? null, traceback: run.error?.traceback ?? "" };
  return { result: { ...run, error }, installed: [], notes: [] };
}

/** Why an install of this cache key failed earlier in the run, or null if none did. */
function earlierFailure(state: AgentState, key: string): string | null {
  for (const note of state.notes) {
    const data = note.data as Partial<PackageInstallNote> | undefined;
    if (data?.kind === "package-install" && data.key === key && data.ok === false) return data.reason ?? "unknown";
  }
  return null;
}
