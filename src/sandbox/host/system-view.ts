import { existsSync, lstatSync, mkdirSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import type { Language } from "../types.js";

/**
 * What a sandboxed program sees of this machine, whichever backend runs it: where its work dir,
 * support files and packages appear, its uid, the system dirs, its environment and its /etc.
 */
/** Where the work dir and the support files appear inside the sandbox. */
export const SANDBOX_WORK_DIR = "/work";
export const SANDBOX_SUPPORT_DIR = "/.selfheal";
/** Where a run's installed packages appear: on sys.path for Python; Node's are bound at /node_modules. */
export const SANDBOX_PACKAGES_DIR = "/.selfheal-packages";
/** The uid and gid the program sees inside its user namespace. */
export const SANDBOX_UID = 1000;

/** The top-level system directories: symlinks into /usr on a merged-/usr host, real directories otherwise. */
export const SYSTEM_DIRS = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/** Where a cache entry is bound for a language: Python's whole entry, Node's node_modules at /node_modules. */
export function packageMount(language: Language, packagesDir: string): { dir: string; at: string } {
  return language === "python"
    ? { dir: packagesDir, at: SANDBOX_PACKAGES_DIR }
    : { dir: join(packagesDir, "node_modules"), at: "/node_modules" };
}

/** PATH with the interpreters first, HOME at the work dir, and the host's locale. */
export function sandboxEnv(prefixes: string[]): Record<string, string> {
  const path = [...prefixes.map((prefix) => join(prefix, "bin")), "/usr/local/bin", "/usr/bin", "/bin"];
  const env: Record<string, string> = { PATH: [...new Set(path)].join(":"), HOME: SANDBOX_WORK_DIR };
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && (name === "LANG" || name === "LANGUAGE" || name.startsWith("LC_"))) env[name] = value;
  }
  env.LANG ??= "C.UTF-8";
  return env;
}

/** The files a sandbox's /etc holds: generated accounts and hosts, plus the host's loader cache and timezone. */
export interface SandboxEtcFile {
  /** Path on the host. */
  source: string;
  /** Path inside the sandbox. */
  target: string;
}

/** Writes the generated /etc files once into the support dir and lists what a sandbox binds at /etc. */
export function sandboxEtcFiles(supportDir: string): SandboxEtcFile[] {
  const etc = join(supportDir, "etc");
  if (!existsSync(join(etc, "passwd"))) {
    mkdirSync(etc, { recursive: true, mode: 0o755 });
    // Node's os.userInfo() and Python's getpass need the running uid to have an entry.
    writeFileSync(
      join(etc, "passwd"),
      `root:x:0:0:root:/nonexistent:/usr/sbin/nologin\nsandbox:x:${SANDBOX_UID}:${SANDBOX_UID}:sandbox:${SANDBOX_WORK_DIR}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
      { mode: 0o644 },
    );
    writeFileSync(join(etc, "group"), `root:x:0:\nsandbox:x:${SANDBOX_UID}:\nnogroup:x:65534:\n`, { mode: 0o644 });
    writeFileSync(join(etc, "hosts"), "127.0.0.1 localhost sandbox\n::1 localhost\n", { mode: 0o644 });
    writeFileSync(join(etc, "nsswitch.conf"), "passwd: files\ngroup: files\nhosts: files\n", { mode: 0o644 });
  }
  const files = ["passwd", "group", "hosts", "nsswitch.conf"].map((name) => ({
    source: join(etc, name),
    target: `/etc/${name}`,
  }));
  // /etc/alternatives: Debian's switchable libraries are symlinks through it (numpy's libblas.so.3);
  // /etc/matplotlibrc: Debian's matplotlib keeps its defaults there and will not import without them.
  // /etc/fonts: without it fontconfig prints "Fontconfig error: Cannot load default config file" on
  // every matplotlib run, noise in the stderr the fixer reads; it names font folders, nothing secret.
  for (const file of ["/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/alternatives", "/etc/matplotlibrc", "/etc/fonts"]) {
    if (existsSync(file)) files.push({ source: file, target: file });
  }
  const localtime = resolveOrNull("/etc/localtime");
  if (localtime) files.push({ source: localtime, target: "/etc/localtime" });
  return files;
}

export function lstatOrNull(path: string): ReturnType<typeof lstatSync> | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

function resolveOrNull(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}

/** Where the system's CA certificates are: bound into a run that may reach hosts, so TLS clients can check them. */
export const CA_CERTIFICATE_DIRS = ["/etc/ssl", "/etc/ca-certificates"];
