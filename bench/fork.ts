/**
 * The floor under a "back to back" run that gets a fresh process: what it costs a loaded
 * interpreter (the very Python the sandboxes run) to fork a child that exits at once, and to fork
 * one that first makes itself the namespaces a sandbox gives each run (user, mount, pid, ipc, uts,
 * net; the pid namespace needs a second fork). A fork server would pay this per run on top of
 * the program; the interpreter started with `-S` shows how much of it is `site`'s modules. Each
 * figure is a p50 of forks 50 ms apart, as runs with an instant model come. Then what a page
 * costs the first time it is written: a fresh one, and one a fork left shared (copy on write), which
 * every forked process pays for each page its Python touches (refcounts included): on a VM that
 * traps page-table changes to its host, this, not the fork itself, is most of a forked run's CPU
 * (docs/benchmark.md, "Where a forked run's CPU goes"). Asserts nothing.
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

/** A page's first write, fresh and copy-on-write, in a region of PAGES pages: each a fault. */
const PAGE_FAULTS = `
import mmap, os, sys, time
pages, rounds = int(sys.argv[1]), int(sys.argv[2])
def per_page(region, value):
    started = time.perf_counter()
    for offset in range(0, pages * mmap.PAGESIZE, mmap.PAGESIZE):
        region[offset] = value
    return (time.perf_counter() - started) * 1e6 / pages
fresh, shared, own = [], [], []
for _ in range(rounds):
    region = mmap.mmap(-1, pages * mmap.PAGESIZE)
    fresh.append(per_page(region, 1))
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        figures = (per_page(region, 2), per_page(region, 3))
        os.write(write_end, ("%f %f" % figures).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    copied, again = map(float, os.read(read_end, 100).split())
    os.close(read_end)
    os.close(write_end)
    shared.append(copied)
    own.append(again)
    region.close()
median = lambda figures: sorted(figures)[len(figures) // 2]
print("%.2f %.2f %.2f" % (median(fresh), median(shared), median(own)))
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

// 25600 pages: 100 MiB, far past what any cache holds, in 5 rounds.
const faults = spawnSync(python.executable, ["-I", "-c", PAGE_FAULTS, "25600", "5"], { encoding: "utf8" });
if (faults.status !== 0) throw new Error(`page faults: ${faults.stderr}`);
const [fresh, copied, own] = faults.stdout.trim().split(" ");
console.log(
  "\none page's first write, p50 of 5 rounds over 100 MiB (the loop's own cost included: see the last column)",
);
console.log("fresh page us   shared since a fork (copied) us   already its own us");
console.log(`${String(fresh).padStart(12)}   ${String(copied).padStart(31)}   ${String(own).padStart(18)}`);
