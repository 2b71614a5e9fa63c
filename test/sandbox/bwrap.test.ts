import { describe, expect, it } from "vitest";

import { buildBwrapArgv } from "../../src/sandbox/host/bwrap-argv.js";
import { SANDBOX_WORK_DIR } from "../../src/sandbox/host/system-view.js";

const host = { bwrap: "/usr/bin/bwrap", prlimit: "/usr/bin/prlimit", setpriv: "/usr/bin/setpriv" };
const base = {
  host,
  workDir: "/tmp/selfheal-run-abc",
  supportDir: "/tmp/selfheal-support-xyz",
  prefixes: ["/usr"],
  command: ["/usr/bin/prlimit", "--nproc=64", "--", "/usr/bin/python3", "-I", "-u", "main.py"],
};

/** Every `--bind`/`--ro-bind` target, i.e. what of the host the program can see. */
function mountTargets(argv: string[]): { flag: string; source: string; target: string }[] {
  const mounts: { flag: string; source: string; target: string }[] = [];
  argv.forEach((argument, index) => {
    if (argument === "--bind" || argument === "--ro-bind" || argument === "--dev-bind") {
      mounts.push({ flag: argument, source: argv[index + 1] ?? "", target: argv[index + 2] ?? "" });
    }
  });
  return mounts;
}

/** The arguments of the bwrap that runs the program (after any setpriv). */
function innerBwrap(argv: string[]): string[] {
  const start = argv.lastIndexOf(host.bwrap);
  const end = argv.indexOf("--", start + 1);
  return argv.slice(start, end === -1 ? undefined : end + 1 + base.command.length);
}

describe("the bwrap command line", () => {
  const argv = buildBwrapArgv({ ...base, hostUid: null });

  it("creates new user, pid, network, ipc and uts namespaces", () => {
    for (const flag of ["--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]) {
      expect(argv).toContain(flag);
    }
  });

  it("dies with its parent, starts a new session and drops all capabilities", () => {
    expect(argv).toContain("--die-with-parent");
    expect(argv).toContain("--new-session");
    expect(argv[argv.indexOf("--cap-drop") + 1]).toBe("ALL");
  });

  it("makes the work dir the only writable bind", () => {
    const writable = mountTargets(argv).filter((mount) => mount.flag !== "--ro-bind");
    expect(writable).toEqual([{ flag: "--bind", source: base.workDir, target: SANDBOX_WORK_DIR }]);
    argv.forEach((argument, index) => {
      if (argument === "--tmpfs") expect(argv[index - 2]).toBe("--size");
    });
    // The tree bwrap builds (/, /etc, /dev) is made read-only once the mounts are in place.
    expect(argv.slice(argv.lastIndexOf("--remount-ro"), argv.lastIndexOf("--remount-ro") + 2)).toEqual([
      "--remount-ro",
      "/",
    ]);
  });

  it("shows no host home, project or account files", () => {
    const targets = mountTargets(argv).map((mount) => mount.target);
    for (const target of targets) {
      expect(target).not.toMatch(/^\/(root|home)(\/|$)/);
      expect(target).not.toBe("/etc/shadow");
      expect(target).not.toBe(process.cwd());
    }
    const etc = targets.filter((target) => target.startsWith("/etc/"));
    expect(
      etc.every((target) =>
        /^\/etc\/(passwd|group|hosts|nsswitch\.conf|ld\.so\.cache|ld\.so\.conf|localtime|alternatives|matplotlibrc|fonts)$/.test(
          target,
        ),
      ),
    ).toBe(true);
  });

  it("passes only PATH, HOME and locale variables", () => {
    expect(argv).toContain("--clearenv");
    const names = argv.flatMap((argument, index) => (argument === "--setenv" ? [argv[index + 1]] : []));
    for (const name of names) expect(name).toMatch(/^(PATH|HOME|LANG|LANGUAGE|LC_\w+)$/);
  });

  it("ends with the program command", () => {
    expect(argv.slice(-base.command.length - 1)).toEqual(["--", ...base.command]);
  });

  it("drops to the given unprivileged host uid before bwrap when running as root", () => {
    const asRoot = buildBwrapArgv({ ...base, hostUid: 1_500_000_123 });
    const setprivAt = asRoot.indexOf(host.setpriv);
    expect(setprivAt).toBeGreaterThanOrEqual(0);
    expect(asRoot.slice(setprivAt, setprivAt + 4)).toEqual([
      host.setpriv,
      "--reuid=1500000123",
      "--regid=1500000123",
      "--clear-groups",
    ]);
    expect(asRoot.indexOf(host.bwrap, setprivAt)).toBeGreaterThan(setprivAt);
    expect(innerBwrap(asRoot)).toContain("--unshare-user");
  });
});

describe("the bwrap command line with whole-run limits", () => {
  const join = ["/bin/sh", "-c", 'echo $$ > "$1" && shift 1 && exec "$@"', "sh", "/sys/fs/cgroup/x/cgroup.procs"];
  const argv = buildBwrapArgv({
    ...base,
    hostUid: 1_500_000_123,
    seccomp: true,
    tmpDir: "/tmp/selfheal-run-abc/tmp",
    cgroupJoin: join,
  });

  it("joins the run's cgroup first, while still root, so every later process is inside", () => {
    expect(argv.slice(0, join.length)).toEqual(join);
    expect(argv.indexOf(host.setpriv)).toBeGreaterThan(join.length - 1);
  });

  it("hands the seccomp filter to the bwrap that runs the program", () => {
    const inner = innerBwrap(argv);
    expect(inner[inner.indexOf("--seccomp") + 1]).toBe("4");
  });

  it("binds the run's own tmpfs at /tmp instead of an unbounded-inode one", () => {
    expect(mountTargets(argv)).toContainEqual({ flag: "--bind", source: "/tmp/selfheal-run-abc/tmp", target: "/tmp" });
    const tmpfsTargets = argv.flatMap((argument, index) => (argument === "--tmpfs" ? [argv[index + 1]] : []));
    expect(tmpfsTargets).not.toContain("/tmp");
  });
});
