import { createHash } from "node:crypto";
import { existsSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir, constants as osConstants } from "node:os";
import { join } from "node:path";

import { type HostSteps, runStepsSync } from "./host-commands.js";
import { findOnPath } from "./interpreters.js";

/**
 * The system calls a sandboxed program is refused, in the spirit of Docker's default profile:
 * tracing and reading other processes, mounting and namespaces, the kernel keyring, eBPF, perf,
 * userfaultfd (a favourite of kernel exploits), kernel modules and kexec, and host-wide settings.
 * Most already fail without capabilities; the filter closes them before the kernel parses their
 * arguments, which is where the exploits live.
 */
export const SECCOMP_DENIED_EPERM = [
  "ptrace",
  "process_vm_readv",
  "process_vm_writev",
  "pidfd_getfd",
  "kcmp",
  "mount",
  "umount2",
  "pivot_root",
  "chroot",
  "move_mount",
  "open_tree",
  "fsopen",
  "fsconfig",
  "fsmount",
  "fspick",
  "mount_setattr",
  "unshare",
  "setns",
  "keyctl",
  "add_key",
  "request_key",
  "bpf",
  "perf_event_open",
  "userfaultfd",
  "fanotify_init",
  "lookup_dcookie",
  "open_by_handle_at",
  "name_to_handle_at",
  "kexec_load",
  "kexec_file_load",
  "init_module",
  "finit_module",
  "delete_module",
  "create_module",
  "get_kernel_syms",
  "query_module",
  "reboot",
  "swapon",
  "swapoff",
  "acct",
  "quotactl",
  "quotactl_fd",
  "syslog",
  "nfsservctl",
  "uselib",
  "vhangup",
  "settimeofday",
  "clock_settime",
  "clock_adjtime",
  "adjtimex",
  "sethostname",
  "setdomainname",
  "iopl",
  "ioperm",
  "vm86",
  "vm86old",
  "mbind",
  "set_mempolicy",
  "migrate_pages",
  "move_pages",
] as const;

/**
 * Refused with ENOSYS instead, as if the kernel were older, because callers fall back: libuv and
 * others from io_uring to threads, glibc from clone3 to clone (whose flags a filter could read;
 * clone3's live in memory it cannot).
 */
export const SECCOMP_DENIED_ENOSYS = ["io_uring_setup", "io_uring_enter", "io_uring_register", "clone3"] as const;

/**
 * The same deny-list as an OCI / Docker seccomp profile for the container backend, written once by
 * content next to the BPF filter; the engine CLI reads it from there
 * (`--security-opt seccomp=FILE`). Everything else is allowed, as in the BPF filter.
 */
export function seccompProfileFile(cacheDir = defaultCacheDir()): string {
  const errno = osConstants.errno;
  const profile = JSON.stringify({
    defaultAction: "SCMP_ACT_ALLOW",
    syscalls: [
      { names: SECCOMP_DENIED_EPERM, action: "SCMP_ACT_ERRNO", errnoRet: errno.EPERM },
      { names: SECCOMP_DENIED_ENOSYS, action: "SCMP_ACT_ERRNO", errnoRet: errno.ENOSYS },
    ],
  });
  const file = join(
    cacheDir,
    `seccomp-profile-${createHash("sha256").update(profile).digest("hex").slice(0, 16)}.json`,
  );
  if (!existsSync(file)) {
    mkdirSync(cacheDir, { recursive: true });
    const partial = `${file}.${process.pid}.tmp`;
    writeFileSync(partial, profile);
    renameSync(partial, file);
  }
  return file;
}

/**
 * Builds the BPF with libseccomp's Python binding (Debian's python3-seccomp): a maintained
 * library that knows every architecture's numbers, rather than hand-assembled BPF. The filter is
 * for the native ABI; libseccomp gives calls through any other ABI (i386's int 0x80, x32 on an
 * x86_64 kernel) its bad-architecture action, which kills the process, so they are no way around it.
 */
const GENERATOR = `
import errno, json, sys
import seccomp
spec = json.loads(sys.argv[1])
rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
unknown = []
for action, names in ((seccomp.ERRNO(errno.EPERM), spec["eperm"]), (seccomp.ERRNO(errno.ENOSYS), spec["enosys"])):
    for name in names:
        try:
            rules.add_rule(action, name)
        except Exception:
            unknown.append(name)
with open(sys.argv[2], "wb") as out:
    rules.export_bpf(out)
print(json.dumps({"arch": str(seccomp.system_arch()), "unknown": unknown}))
`;

export type SeccompFilter = { usable: true; path: string; arch: string } | { usable: false; reason: string };

let cached: SeccompFilter | undefined;

/**
 * The filter's BPF file, built on first use and cached by content (the lists above and the
 * generator) per machine architecture, in `$XDG_CACHE_HOME/selfheal` (or ~/.cache/selfheal).
 * Building takes one Python start, about 50 ms; every later process reuses the file. Blocks;
 * a sandbox gets its filter through `seccompFilterSteps` (run by `prepareHost`) instead.
 */
export function seccompFilter(options: { cacheDir?: string; path?: string } = {}): SeccompFilter {
  if (options.cacheDir !== undefined || options.path !== undefined)
    return runStepsSync(buildFilter(options.cacheDir ?? defaultCacheDir(), options.path));
  return runStepsSync(seccompFilterSteps());
}

/** The steps that find (or build) this process's filter, once per process. */
export function* seccompFilterSteps(): HostSteps<SeccompFilter> {
  if (cached) return cached;
  const filter = yield* buildFilter(defaultCacheDir(), undefined);
  cached ??= filter;
  return cached;
}

function defaultCacheDir(): string {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "selfheal");
}

function* buildFilter(cacheDir: string, searchPath: string | undefined): HostSteps<SeccompFilter> {
  if (process.platform !== "linux") return { usable: false, reason: "seccomp exists only on Linux" };
  const spec = JSON.stringify({ eperm: SECCOMP_DENIED_EPERM, enosys: SECCOMP_DENIED_ENOSYS });
  const key = createHash("sha256").update(GENERATOR).update(spec).digest("hex").slice(0, 16);
  const file = join(cacheDir, `seccomp-${process.arch}-${key}.bpf`);
  if (existsSync(file) && statSync(file).size > 0) return { usable: true, path: file, arch: process.arch };

  // The binding is built for Debian's own python3, which is rarely the first python3 on PATH.
  const candidates = [
    ...new Set(
      ["/usr/bin/python3", findOnPath("python3", searchPath ?? process.env.PATH ?? "")].filter(
        (item): item is string => item !== null,
      ),
    ),
  ];
  const problems: string[] = [];
  try {
    mkdirSync(cacheDir, { recursive: true });
  } catch (error) {
    return { usable: false, reason: `cannot write the seccomp filter cache ${cacheDir}: ${(error as Error).message}` };
  }
  for (const python of candidates) {
    if (!existsSync(python)) continue;
    const partial = `${file}.${process.pid}.tmp`;
    const result = yield {
      file: python,
      args: ["-I", "-c", GENERATOR, spec, partial],
      timeoutMs: 30_000,
      env: { PATH: "/usr/bin:/bin" },
    };
    if (result.status === 0) {
      renameSync(partial, file);
      return { usable: true, path: file, arch: process.arch };
    }
    rmSync(partial, { force: true });
    problems.push(`${python}: ${(result.stderr || result.error || `exit ${result.status}`).trim().split("\n").pop()}`);
  }
  return {
    usable: false,
    reason: `no python3 with the libseccomp binding to build the filter (apt-get install python3-seccomp)${problems.length ? `; ${problems.join("; ")}` : ""}`,
  };
}
