/**
 * The floor under a "back to back" run that gets a fresh process: what it costs a loaded
 * interpreter (the very Python the sandboxes run) to fork a child that exits at once, and to fork
 * one that first makes itself the namespaces a sandbox gives each run (user, mount, pid, ipc, uts,
 * net; the pid namespace needs a second fork). A fork server would pay this per run on top of
 * the program; the interpreter started with `-S` shows how much of it is `site`'s modules. Each
 * figure is a p50 of forks 50 ms apart, as runs with an instant model come. Asserts nothing.
 *
 *   npm run bench:fork [-- --forks 60]
 */
import { spawnSync } from "node:child_process";
import { loadavg } from "node:os";
import { parseArgs } from "node:util";

import { resolveInterpreters } from "../src/sandbox/host/interpreters.js";

const { values } = parseArgs({ options: { forks: { type: "string", default: "60" } } });

const MEASURE = `
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
FLAGS = {"user": 0x10000000, "mnt": 0x20000, "pid": 0x20000000, "ipc": 0x8000000, "uts": 0x4000000, "net": 0x40000000}
def p50(flags, forks):
    times = []
    for _ in range(forks):
        time.sleep(0.05)
        started = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            if flags and libc.unshare(flags) != 0:
                os._exit(100 + ctypes.get_errno())
            if flags & FLAGS["pid"]:
                inner = os.fork()
                if inner == 0:
                    os._exit(0)
                os.waitpid(inner, 0)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        if status != 0:
            sys.exit("the child failed: errno %d" % ((status >> 8) - 100))
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return times[len(times) // 2]
forks = int(sys.argv[1])
print("%.2f %.2f" % (p50(0, forks), p50(sum(FLAGS.values()), forks)))
`;

const python = (await resolveInterpreters()).python;
if (!python) throw new Error("no Python found");
console.log(
  `python: ${python.executable}; load average ${loadavg()
    .map((load) => load.toFixed(2))
    .join(" ")}`,
);
console.log(`${"interpreter".padEnd(32)} fork + exit p50 ms   fork + six namespaces p50 ms`);
for (const [label, flags] of [
  ["-I (site and its .pth files)", ["-I"]],
  ["-I -S (no site)", ["-I", "-S"]],
] as const) {
  const result = spawnSync(python.executable, [...flags, "-c", MEASURE, values.forks], { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`${label}: ${result.stderr}`);
  const [plain, namespaced] = result.stdout.trim().split(" ");
  console.log(`${label.padEnd(32)} ${String(plain).padStart(17)}   ${String(namespaced).padStart(28)}`);
}
