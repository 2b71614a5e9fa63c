import { execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, realpathSync } from "node:fs";
import { chmod, mkdir, mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { promisify } from "node:util";

import { messageOf } from "../../core/errors.js";
import type { PackageInstall } from "../../core/settings.js";
import { getSupportDir } from "../host/bootstrap.js";
import { buildBwrapArgv } from "../host/bwrap-argv.js";
import { findBwrapHost } from "../host/bwrap-probe.js";
import { findOnPath, resolveInterpreters } from "../host/interpreters.js";
import { SANDBOX_WORK_DIR } from "../host/system-view.js";
import type { Language, RunResult } from "../types.js";

const execFileAsync = promisify(execFile);

/** Written into an entry before it is renamed into place: an entry without it is not one. */
export const PACKAGE_ENTRY_MARKER = "selfheal-packages.json";
/** Bytes of installer output kept for the report; the end of pip's or npm's output says why it failed. */
const INSTALLER_OUTPUT_BYTES = 64 * 1024;

/**
 * Python import names that differ from the name the package is published under. Only the common
 * ones; any other module is looked up under its own name.
 */
export const PYTHON_IMPORT_NAMES: Record<string, string> = {
  PIL: "pillow",
  bs4: "beautifulsoup4",
  cv2: "opencv-python",
  dateutil: "python-dateutil",
  sklearn: "scikit-learn",
  yaml: "pyyaml",
};

/** The name in a package spec, without its version: `requests==2.31` -> `requests`, `@a/b@1` -> `@a/b`. */
export function packageName(language: Language, spec: string): string {
  if (language === "javascript") {
    const at = spec.indexOf("@", 1);
    return at === -1 ? spec : spec.slice(0, at);
  }
  return spec.split(/[=<>!~;[\s]/, 1)[0] ?? spec;
}

/** pip compares names case-insensitively with `-`, `_` and `.` the same (PEP 503); npm names are exact. */
function comparableName(language: Language, name: string): string {
  return language === "python" ? name.toLowerCase().replace(/[-_.]+/g, "-") : name;
}

/**
 * The module a failed run could not import, as its top-level package (`No module named 'a.b'` ->
 * `a`, `Cannot find module 'x/y'` -> `x`), or null when the run failed for another reason.
 * Relative paths and Node's built-ins are the program's own mistakes, not packages.
 */
export function missingModule(language: Language, run: Pick<RunResult, "error" | "stderr">): string | null {
  if (language === "python") {
    if (run.error?.type !== "ModuleNotFoundError") return null;
    const name = /No module named '([^']+)'/.exec(run.error.message)?.[1];
    return name?.split(".")[0] ?? null;
  }
  const text = `${run.error?.message ?? ""}\n${run.stderr}`;
  const name = /Cannot find (?:module|package) '([^']+)'/.exec(text)?.[1];
  if (!name || /^(?:\.|\/|node:|file:)/.test(name)) return null;
  const parts = name.split("/");
  return name.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] ?? null);
}

/** The allowed spec that provides `module`, or null when no allowed package does. */
export function allowedPackageFor(language: Language, module: string, allowed: readonly string[]): string | null {
  const wanted = comparableName(language, language === "python" ? (PYTHON_IMPORT_NAMES[module] ?? module) : module);
  return allowed.find((spec) => comparableName(language, packageName(language, spec)) === wanted) ?? null;
}

/** `$SELFHEAL_PACKAGE_CACHE`, else `$XDG_CACHE_HOME/selfheal/packages`, else `~/.cache/selfheal/packages`. */
export function defaultPackageCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SELFHEAL_PACKAGE_CACHE) return env.SELFHEAL_PACKAGE_CACHE;
  return join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "selfheal", "packages");
}

const versions = new Map<string, Promise<string>>();

/** `python 3.11.7` or `node v20.11.0`, asked of the interpreter the sandbox runs, once per process. */
async function interpreterVersion(language: Language, executable: string): Promise<string> {
  let version = versions.get(executable);
  if (!version) {
    const args =
      language === "python"
        ? ["-I", "-c", "import sys, platform; print(platform.python_implementation(), platform.python_version())"]
        : ["-p", '"node " + process.version'];
    version = execFileAsync(executable, args, { timeout: 15_000, env: { PATH: process.env.PATH ?? "" } }).then(
      ({ stdout }) => stdout.trim(),
    );
    versions.set(executable, version);
  }
  return version;
}

/** The cache key: the language, the sorted specs and the interpreter (with the machine, for native wheels). */
export function packageCacheKey(language: Language, specs: readonly string[], interpreter: string): string {
  const identity = JSON.stringify([language, [...specs].sort(), interpreter, process.platform, process.arch]);
  return `${language}-${createHash("sha256").update(identity).digest("hex").slice(0, 24)}`;
}

export interface PackageRequest {
  language: Language;
  /** Every allowed spec of the language: one cache entry holds them all. */
  specs: readonly string[];
  install: PackageInstall;
  /** The Python the packages are for (`settings.python`); the default one when absent. */
  python?: string | null;
}

/** Where a language's packages are in the cache; `ready` when an earlier install put them there. */
export interface PackageEntry {
  key: string;
  dir: string;
  ready: boolean;
}

/** The entry for these specs with this interpreter, installed or not; null when the interpreter is missing. */
export async function findPackageEntry(request: PackageRequest): Promise<PackageEntry | null> {
  const interpreter = (await resolveInterpreters(request.python))[request.language];
  if (!interpreter) return null;
  const version = await interpreterVersion(request.language, interpreter.executable);
  const key = packageCacheKey(request.language, request.specs, version);
  const dir = join(request.install.cacheDir ?? defaultPackageCacheDir(), key);
  return { key, dir, ready: existsSync(join(dir, PACKAGE_ENTRY_MARKER)) };
}

/** Where the installer ran: in bwrap with only the network of the host, or on the host itself. */
export type InstallerPlace = "bwrap" | "host";

export type InstallOutcome =
  | { ok: true; entry: PackageEntry; durationMs: number; place: InstallerPlace | "cache" }
  | { ok: false; reason: string; durationMs: number; place: InstallerPlace };

/** Installs in flight in this process, by key: a second run asking for the same key waits for the first. */
const inFlight = new Map<string, Promise<InstallOutcome>>();

/**
 * Installs the specs into their cache entry. The installer writes into a temp dir beside the
 * entry, which is renamed into place only when complete, so a crash or a concurrent install of the
 * same key never leaves a half-written entry: the first rename wins and the loser's copy is dropped.
 */
export function installPackages(request: PackageRequest, entry: PackageEntry): Promise<InstallOutcome> {
  if (entry.ready) return Promise.resolve({ ok: true, entry, durationMs: 0, place: "cache" });
  let pending = inFlight.get(entry.key);
  if (!pending) {
    pending = installIntoCache(request, entry).finally(() => inFlight.delete(entry.key));
    inFlight.set(entry.key, pending);
  }
  return pending;
}

async function installIntoCache(request: PackageRequest, entry: PackageEntry): Promise<InstallOutcome> {
  const startedAt = Date.now();
  const elapsed = () => Date.now() - startedAt;
  const bwrap = await findBwrapHost();
  const place: InstallerPlace = bwrap.usable ? "bwrap" : "host";
  let staging: string;
  try {
    await mkdir(dirname(entry.dir), { recursive: true });
    staging = await mkdtemp(join(dirname(entry.dir), `.staging-${entry.key}-`));
  } catch (error) {
    // A cache dir that cannot be written is the install's failure, reported like any other.
    return {
      ok: false,
      reason: `cannot write the package cache: ${messageOf(error)}`,
      durationMs: elapsed(),
      place,
    };
  }
  try {
    for (const part of ["home", "tmp"]) await mkdir(join(staging, part));
    // Inside bwrap the staging dir is /work; on the host it is itself.
    const root = bwrap.usable ? SANDBOX_WORK_DIR : staging;
    // A local wheel folder is bound at a fixed path: bwrap's fresh /tmp would hide one under /tmp.
    const wheels = localFindLinks(request.install);
    const findLinks = bwrap.usable && wheels ? SANDBOX_FIND_LINKS_DIR : request.install.pythonFindLinks;
    const paths = { target: join(root, "entry"), npmCache: join(root, "npm-cache"), findLinks };
    const command = await installerCommand(request, paths);
    if ("reason" in command) return { ok: false, reason: command.reason, durationMs: elapsed(), place };
    const env = { ...installerEnv(), HOME: join(root, "home"), TMPDIR: join(root, "tmp") };
    const argv = bwrap.usable
      ? buildBwrapArgv({
          host: bwrap.host,
          hostUid: null,
          workDir: staging,
          supportDir: getSupportDir(),
          prefixes: command.reads,
          command: command.argv,
          env,
          shareNetwork: true,
          packages: wheels ? { dir: wheels, at: SANDBOX_FIND_LINKS_DIR } : null,
        })
      : command.argv;
    const result = await runInstaller(argv, env, request.install.timeoutMs);
    if (result.problem) return { ok: false, reason: result.problem, durationMs: elapsed(), place };
    const target = join(staging, "entry");
    await chmod(target, 0o755);
    const marker = { language: request.language, specs: [...request.specs].sort(), installedAt: new Date() };
    await writeFile(join(target, PACKAGE_ENTRY_MARKER), `${JSON.stringify(marker)}\n`, { mode: 0o644 });
    try {
      await rename(target, entry.dir);
    } catch (error) {
      // Another process renamed its copy first; theirs is as good as ours.
      if (!existsSync(join(entry.dir, PACKAGE_ENTRY_MARKER))) throw error;
    }
    return { ok: true, entry: { ...entry, ready: true }, durationMs: elapsed(), place };
  } catch (error) {
    return { ok: false, reason: messageOf(error), durationMs: elapsed(), place };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/**
 * pip (or uv) with `--target`, npm with `--prefix`. Only wheels, and no npm install scripts: the
 * installer has network, and neither may run code from a package while it installs.
 */
export async function installerCommand(
  request: PackageRequest,
  paths: { target: string; npmCache: string; findLinks?: string | null },
  searchPath: string = process.env.PATH ?? "",
): Promise<InstallerCommand | { reason: string }> {
  const interpreter = (await resolveInterpreters(request.python))[request.language];
  if (!interpreter) return { reason: `no ${request.language} interpreter to install packages for` };
  const { install } = request;
  const { target } = paths;
  if (request.language === "javascript") {
    const npm = findOnPath("npm", [dirname(interpreter.executable), searchPath].join(delimiter));
    if (!npm) return { reason: "npm was not found on PATH" };
    const registry = install.npmRegistry ?? process.env.npm_config_registry ?? "https://registry.npmjs.org/";
    return {
      argv: [
        ...[npm, "install", "--prefix", target, "--registry", registry, "--cache", paths.npmCache],
        ...["--ignore-scripts", "--no-audit", "--no-fund", "--no-update-notifier", "--loglevel=error"],
        ...request.specs,
      ],
      // npm-cli.js sits in npm's own package dir (node_modules/npm/bin), often outside node's prefix.
      reads: [...interpreter.prefixes, dirname(dirname(realpathSync(npm)))],
    };
  }
  const index: string[] = [];
  const findLinks = paths.findLinks === undefined ? install.pythonFindLinks : paths.findLinks;
  if (findLinks) index.push("--find-links", findLinks);
  if (install.pythonIndexUrl) index.push("--index-url", install.pythonIndexUrl);
  else if (findLinks) index.push("--no-index");
  const common = ["--target", target, "--only-binary", ":all:", ...index, ...request.specs];
  const reads = [...interpreter.prefixes];
  const uv = findOnPath("uv", searchPath);
  if (uv) {
    const argv = [uv, "pip", "install", "--python", interpreter.executable, "--no-cache", ...common];
    return { argv, reads: [...reads, dirname(realpathSync(uv))] };
  }
  const pip = ["-I", "-m", "pip", "install", "--no-input", "--disable-pip-version-check", "--no-cache-dir"];
  return { argv: [interpreter.executable, ...pip, ...common], reads };
}

/** Where a local `pythonFindLinks` folder appears inside the installer's bwrap. */
const SANDBOX_FIND_LINKS_DIR = "/.selfheal-find-links";

/** `pythonFindLinks` when it is a folder on this machine rather than a URL. */
function localFindLinks(install: PackageInstall): string | null {
  const links = install.pythonFindLinks;
  return links && !/^[a-z][a-z0-9+.-]*:\/\//i.test(links) ? links : null;
}

/** The installer's command line, and the host dirs it reads (bound read-only when it runs in bwrap). */
export interface InstallerCommand {
  argv: string[];
  reads: string[];
}

/** The locale, proxies and CA bundles: what reaching an index needs, and nothing else of the caller's env. */
const INSTALLER_ENV =
  /^(?:LANG|LANGUAGE|LC_\w+|https?_proxy|no_proxy|SSL_CERT_FILE|SSL_CERT_DIR|NODE_EXTRA_CA_CERTS|REQUESTS_CA_BUNDLE|PIP_CERT|npm_config_cafile)$/i;

/**
 * PATH and `INSTALLER_ENV`; the caller sets HOME to an empty dir, so the user's ~/.npmrc and
 * pip.conf (which may hold tokens) are not read: the index comes from `settings.packageInstall`.
 */
function installerEnv(): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin" };
  const passed = INSTALLER_ENV;
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && passed.test(name)) env[name] = value;
  }
  return env;
}

/** Runs the installer in its own process group, killed as a whole at the deadline; a problem is a sentence. */
function runInstaller(
  argv: string[],
  env: Record<string, string>,
  timeoutMs: number,
): Promise<{ problem: string | null }> {
  return new Promise((resolve) => {
    const [file = "", ...args] = argv;
    const child = spawn(file, args, { env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString("utf8")).slice(-INSTALLER_OUTPUT_BYTES);
    };
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }, timeoutMs);
    const name = file.split("/").at(-1) ?? file;
    child.on("error", (error) => {
      clearTimeout(timer);
      resolve({ problem: `${name} could not start: ${error.message}` });
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (timedOut) resolve({ problem: `the install timed out after ${timeoutMs} ms` });
      else if (code === 0) resolve({ problem: null });
      else resolve({ problem: `${name} exited with ${code ?? signal}: ${lastLines(output)}` });
    });
  });
}

/** The end of the installer's output, where pip and npm say why they failed. */
function lastLines(output: string): string {
  const lines = output.trim().split("\n").filter(Boolean);
  return lines.slice(-4).join(" / ").slice(-600) || "no output";
}
