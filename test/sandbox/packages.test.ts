import { chmodSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseSettings } from "../../src/index.js";
import { buildBwrapArgv } from "../../src/sandbox/host/bwrap-argv.js";
import { interpreterCommand } from "../../src/sandbox/host/command.js";
import { packageMount, SANDBOX_PACKAGES_DIR } from "../../src/sandbox/host/system-view.js";
import { DEFAULT_LIMITS } from "../../src/sandbox/limits.js";
import {
  allowedPackageFor,
  defaultPackageCacheDir,
  findPackageEntry,
  installerCommand,
  installPackages,
  missingModule,
  packageCacheKey,
  packageName,
} from "../../src/sandbox/packages/installer.js";
import { scratchDir } from "../helpers/scratch.js";
import { buildWheel } from "../helpers/wheels.js";

const failed = (type: string, message: string, stderr = "") => ({
  error: { type, message, line: 1, traceback: "" },
  stderr,
});

describe("finding the package a run could not import", () => {
  it("reads the top-level module of a Python ModuleNotFoundError", () => {
    expect(missingModule("python", failed("ModuleNotFoundError", "No module named 'yaml.loader'"))).toBe("yaml");
    expect(missingModule("python", failed("ImportError", "cannot import name 'x' from 'y'"))).toBeNull();
  });

  it("reads Node's require and import errors, scoped names included, and ignores relative paths", () => {
    const required = failed("Error", "Cannot find module 'is-odd/index.js'\nRequire stack:\n- /work/main.js");
    expect(missingModule("javascript", required)).toBe("is-odd");
    const imported = failed(
      "Error",
      "",
      "Error [ERR_MODULE_NOT_FOUND]: Cannot find package '@scope/pkg' imported from /work/main.mjs",
    );
    expect(missingModule("javascript", imported)).toBe("@scope/pkg");
    expect(missingModule("javascript", failed("Error", "Cannot find module './helper'"))).toBeNull();
  });
});

describe("matching a module to the allowlist", () => {
  it("compares Python names as pip does and maps the common import names that differ", () => {
    expect(allowedPackageFor("python", "sh_greet", ["SH.Greet==1.0"])).toBe("SH.Greet==1.0");
    expect(allowedPackageFor("python", "yaml", ["PyYAML"])).toBe("PyYAML");
    expect(allowedPackageFor("python", "yaml", ["requests"])).toBeNull();
  });

  it("takes npm names exactly, without their version", () => {
    expect(packageName("javascript", "@scope/pkg@1.2.0")).toBe("@scope/pkg");
    expect(allowedPackageFor("javascript", "is-odd", ["is-odd@3.0.1"])).toBe("is-odd@3.0.1");
    expect(allowedPackageFor("javascript", "Is-Odd", ["is-odd"])).toBeNull();
  });
});

describe("the package cache", () => {
  it("keys entries by language, the specs in any order and the interpreter", () => {
    const key = packageCacheKey("python", ["b", "a"], "CPython 3.11.2");
    expect(packageCacheKey("python", ["a", "b"], "CPython 3.11.2")).toBe(key);
    expect(packageCacheKey("python", ["a", "b"], "CPython 3.12.0")).not.toBe(key);
    expect(packageCacheKey("javascript", ["a", "b"], "CPython 3.11.2")).not.toBe(key);
  });

  it("lives in $SELFHEAL_PACKAGE_CACHE, else under the XDG cache dir", () => {
    expect(defaultPackageCacheDir({ SELFHEAL_PACKAGE_CACHE: "/srv/cache" })).toBe("/srv/cache");
    expect(defaultPackageCacheDir({ XDG_CACHE_HOME: "/home/u/.cache" })).toBe("/home/u/.cache/selfheal/packages");
  });

  it("installs the same key once when two runs ask for it at the same moment, and leaves no staging dir", async () => {
    const cacheDir = scratchDir("cache");
    const wheels = scratchDir("wheels");
    buildWheel(wheels, "sh_twice", "");
    const request = {
      language: "python" as const,
      specs: ["sh-twice"],
      install: parseSettings({ packageInstall: { cacheDir, pythonFindLinks: wheels } }).packageInstall,
    };
    const entry = await findPackageEntry(request);
    if (!entry) throw new Error("python3 is needed for this test");
    const [first, second] = await Promise.all([installPackages(request, entry), installPackages(request, entry)]);
    expect(first).toBe(second);
    expect(first).toMatchObject({ ok: true, entry: { dir: entry.dir, ready: true } });
    expect(readdirSync(cacheDir)).toEqual([entry.key]);
    expect((await findPackageEntry(request))?.ready).toBe(true);
  });
});

describe("the installer command", () => {
  const install = (extra: object) => parseSettings({ packageInstall: extra }).packageInstall;
  const paths = { target: "/t", npmCache: "/n" };

  it("uses pip with --target, wheels only, and --no-index when only a find-links folder is given", async () => {
    const command = await installerCommand(
      { language: "python", specs: ["sh-greet"], install: install({ pythonFindLinks: "/wheels" }) },
      { target: "/cache/.staging/entry", npmCache: "/n" },
      "/nonexistent",
    );
    expect(command).toMatchObject({ argv: expect.arrayContaining(["-m", "pip", "--target", "/cache/.staging/entry"]) });
    const argv = "argv" in command ? command.argv : [];
    expect(argv.slice(-6)).toEqual(["--only-binary", ":all:", "--find-links", "/wheels", "--no-index", "sh-greet"]);
  });

  it("uses uv where it is on PATH", async () => {
    const bin = scratchDir("uv-bin");
    writeFileSync(join(bin, "uv"), "#!/bin/sh\n");
    chmodSync(join(bin, "uv"), 0o755);
    const command = await installerCommand({ language: "python", specs: ["x"], install: install({}) }, paths, bin);
    expect("argv" in command && command.argv.slice(0, 3)).toEqual([join(bin, "uv"), "pip", "install"]);
  });

  it("uses npm with --prefix, the registry setting and no install scripts", async () => {
    const command = await installerCommand(
      { language: "javascript", specs: ["is-odd"], install: install({ npmRegistry: "http://registry.example/" }) },
      paths,
    );
    const argv = "argv" in command ? command.argv : [];
    expect(argv).toEqual(expect.arrayContaining(["install", "--prefix", "/t", "--ignore-scripts", "is-odd"]));
    expect(argv[argv.indexOf("--registry") + 1]).toBe("http://registry.example/");
  });
});

describe("package settings", () => {
  it("fill in every default from a partial setting", () => {
    const settings = parseSettings({ packages: { python: ["sh-greet"] }, packageInstall: { timeoutMs: 5000 } });
    expect(settings.packages).toEqual({ python: ["sh-greet"], javascript: [] });
    expect(settings.packageInstall).toMatchObject({ timeoutMs: 5000, cacheDir: null, pythonFindLinks: null });
    expect(parseSettings({}).packages).toEqual({ python: [], javascript: [] });
  });

  it("refuse a spec that is an installer option or a path", () => {
    expect(() => parseSettings({ packages: { python: ["--index-url=http://evil"] } })).toThrow(/packages.python.0/);
    expect(() => parseSettings({ packages: { javascript: ["../local"] } })).toThrow(/a package must be a name/);
  });
});

describe("mounting packages into a run", () => {
  it("puts a Python entry at the end of sys.path through the bootstrap", () => {
    const command = interpreterCommand({
      language: "python",
      executable: "/usr/bin/python3",
      limits: DEFAULT_LIMITS,
      warm: false,
      supportDir: "/s",
      prlimit: null,
      pythonPackagesDir: SANDBOX_PACKAGES_DIR,
    });
    expect(command.at(-1)).toBe(`path=${SANDBOX_PACKAGES_DIR}`);
  });

  it("binds the entry read-only in bwrap, re-exposed when it sits under a dir the run's uid cannot enter", () => {
    const hidden = join(scratchDir("hidden-home"), "home");
    mkdirSync(join(hidden, ".cache", "entry"), { recursive: true });
    chmodSync(hidden, 0o700);
    const entry = join(hidden, ".cache", "entry");
    const argv = buildBwrapArgv({
      host: { bwrap: "/usr/bin/bwrap", setpriv: "/usr/bin/setpriv" },
      hostUid: 1_500_000_123,
      workDir: "/tmp/w",
      supportDir: "/tmp/s",
      prefixes: [],
      command: ["true"],
      packages: packageMount("javascript", entry),
    });
    const inner = argv.slice(argv.lastIndexOf("/usr/bin/bwrap"));
    const at = inner.indexOf("/node_modules");
    expect(inner.slice(at - 2, at + 1)).toEqual(["--ro-bind", join(entry, "node_modules"), "/node_modules"]);
    const outer = argv.slice(0, argv.indexOf("/usr/bin/setpriv"));
    expect(outer).toEqual(expect.arrayContaining(["--tmpfs", hidden, "--ro-bind", join(entry, "node_modules")]));
  });
});

describe("the installer's sandbox", () => {
  const argvFor = (extra: { shareNetwork?: boolean }) =>
    buildBwrapArgv({
      host: { bwrap: "/usr/bin/bwrap", setpriv: null },
      hostUid: null,
      workDir: "/cache/.staging-x",
      supportDir: "/tmp/s",
      prefixes: [],
      command: ["pip"],
      ...extra,
    });

  it("keeps the host's network and its resolver, and nothing else of the namespaces", () => {
    const argv = argvFor({ shareNetwork: true });
    expect(argv).not.toContain("--unshare-net");
    expect(argv).toEqual(expect.arrayContaining(["--unshare-user", "--unshare-pid", "--unshare-ipc"]));
    expect(argv).toEqual(expect.arrayContaining(["--ro-bind", "/etc/resolv.conf", "/etc/resolv.conf"]));
  });

  it("is never how a program runs", () => {
    const program = argvFor({});
    expect(program).toContain("--unshare-net");
    expect(program).not.toContain("/etc/resolv.conf");
  });
});

describe("an install that cannot write the cache", () => {
  it("fails as an outcome that says why, not as a thrown error", async () => {
    const blocker = join(scratchDir("cache"), "file");
    writeFileSync(blocker, "");
    const request = {
      language: "python" as const,
      specs: ["sh-x"],
      install: parseSettings({ packageInstall: { cacheDir: join(blocker, "packages") } }).packageInstall,
    };
    const entry = await findPackageEntry(request);
    if (!entry) throw new Error("python3 is needed for this test");
    expect(await installPackages(request, entry)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^cannot write the package cache: ENOTDIR/),
    });
  });
});
