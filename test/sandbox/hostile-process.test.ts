import { createSandbox } from "../../src/sandbox/index.js";
import { isRoot } from "../helpers/capabilities.js";
import { describeOurHostileSuite, type ExpectedEscapes } from "../helpers/hostile-suite.js";

const limits = { maxProcesses: 32, memoryMb: 256, cpuSeconds: 2 };

const PLAIN_PROCESS = "the process backend runs code as the calling user, on the host's file system and network";

/**
 * What the plain process backend cannot contain, anywhere: it is no isolation. Only /etc/shadow
 * depends on the environment, and on nothing but whether the tests run as root.
 */
const PROCESS_BACKEND_GAPS: ExpectedEscapes = {
  "fork bomb": "no per-run process cap: RLIMIT_NPROC counts every process of the user, and root ignores it",
  "write outside the work dir": PLAIN_PROCESS,
  "read the host's home": PLAIN_PROCESS,
  ...(isRoot ? { "read /etc/shadow": "running as root, the code can read it" } : {}),
  "read a secret file": PLAIN_PROCESS,
  "connect to a host listener": PLAIN_PROCESS,
  "setsid grandchild": "a new session leaves the process group the timeout kills",
  "double-forked daemon": "a new session leaves the process group the timeout kills",
  "JS write outside the work dir": PLAIN_PROCESS,
  "JS connect to a host listener": PLAIN_PROCESS,
  "connect to a host listener beside allowHosts": "the proxy is only offered: the program shares the host's network",
  "memory spread over forked processes": "RLIMIT_AS holds per process only",
  "CPU spread over forked processes": "RLIMIT_CPU holds per process only",
  "disk fill in many small files": "RLIMIT_FSIZE holds per file only, in a host dir",
  "inode fill in /tmp": "the code writes the host's /tmp",
  "denied system calls": "no seccomp filter",
  "shared temporary places": "/dev/shm, /tmp, /var/tmp and /run/lock are the host's, shared by every run and process",
};

describeOurHostileSuite("the process backend", {
  createSandbox: () => createSandbox({ kind: "process", limits }),
  kind: "process",
  limits,
  uncontained: PROCESS_BACKEND_GAPS,
});
