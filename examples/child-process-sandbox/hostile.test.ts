import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { describeHostileSuite } from "../../src/testing/index.js";
import { ChildProcessSandbox } from "./index.js";

const limits = { memoryMb: 256, cpuSeconds: 2, maxProcesses: 32 };
const NO_ISOLATION = "a plain child process: it runs as the calling user, on the host's files and network";
const isRoot = process.getuid?.() === 0;

// The same backend against the hostile-code suite. It contains what Node alone can hold (the wall
// clock, the output cap, the environment, stdin, a TMPDIR per run); every other case is written
// down here with its reason and asserted as the escape it is.
describeHostileSuite("the child_process example", () => new ChildProcessSandbox({ limits }), {
  runner: { describe, it, expect, beforeAll, afterAll, afterEach },
  limits,
  uncontained: {
    "memory bomb": "no memory limit: nothing but the wall clock bounds it",
    "fork bomb": "no process limit",
    "memory spread over forked processes": "no memory limit",
    "CPU spread over forked processes": "no CPU limit",
    "disk fill in many small files": "no disk limit: it writes where the user may",
    "inode fill in /tmp": "the program writes the host's /tmp",
    "denied system calls": "no seccomp filter",
    "write outside the work dir": NO_ISOLATION,
    "read the host's home": NO_ISOLATION,
    ...(isRoot ? { "read /etc/shadow": "running as root, the program can read it" } : {}),
    "read a secret file": NO_ISOLATION,
    "connect to a host listener": NO_ISOLATION,
    "setsid grandchild": "a new session leaves the process group the run kills",
    "double-forked daemon": "a new session leaves the process group the run kills",
    "JS write outside the work dir": NO_ISOLATION,
    "JS connect to a host listener": NO_ISOLATION,
    "connect to a host listener beside allowHosts": NO_ISOLATION,
    "descriptors beyond stdio":
      "Node's spawn closes none of the descriptors the host holds without close-on-exec (npm test holds fd 250 open for this case)",
    "shared temporary places": "/dev/shm, /tmp, /var/tmp and /run/lock are the host's",
  },
});
