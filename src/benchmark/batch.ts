import {
  PYTHON_JUDGE,
  PYTHON_JUDGE_FILE,
  PYTHON_JUDGE_LINE,
  PYTHON_JUDGED_PROGRAM_FILE,
  pythonRunMainSource,
  type Sandbox,
} from "../internal.js";
import { mapWithConcurrency } from "./pool.js";

/**
 * Several Python programs in one sandbox run, each in a process of its own: the batch's interpreter
 * starts once, then a copy of it, the forker, forks a copy per program, so a program costs a fork (~10-20 ms here)
 * instead of a sandbox run (namespaces, cgroup, seccomp, work dir and a new interpreter: ~100 ms of
 * CPU, 130-400 ms of wall time on a busy 2-core host). Only for programs we wrote ourselves (the
 * benchmark's references, probes and mutants), never for code a model wrote.
 *
 * The isolation rule, which is what makes a program's outcome in a batch the one it has alone:
 * - Start: each program runs in a fork of an interpreter that has run nothing but this harness's
 *   set-up (the forker, a copy of the harness made before the first program; the set-up imports
 *   a few standard-library modules, among them the probe's json, base64 and copy, which a program
 *   that imports them finds loaded, as after its own first import),
 *   through the sandbox bootstrap's own lines that run main.py (a fresh `__main__`, argv, exit
 *   status, traceback), in a directory of its own holding only its main.py (made for it, removed
 *   after it; the other programs' code is in the harness's memory, not on disk), under the same
 *   rlimits, with the same recursion headroom. Only the hash seed is shared by the forks (per run it is random: a
 *   verdict that hangs on set order is a coin toss either way).
 * - Memory: a fork's changes (modules, builtins, globals, the random state, which Python reseeds in
 *   every fork) die with it; the next program forks from the untouched forker.
 * - Processes: the forker is a child subreaper, so a process a program leaves behind (even one
 *   that left its process group) becomes the forker's child; after each program the forker
 *   checks that it has none, and the harness stops the batch if it has. A program that kills the
 *   forker stops the batch too.
 * - Files and IPC: what separate runs do not share (the work dir, $HOME, $TMPDIR, and, outside the
 *   process backend, /tmp, /dev/shm and the IPC namespace's objects) is fingerprinted (name, type,
 *   size, inode, mtime, ctime; IPC keys, ids, modes and sizes) before the first program and after
 *   each, once the program's own directory is removed; a change, or a directory that cannot be
 *   removed, stops the batch.
 * - Judged programs (their tests in a process of their own, prepare.ts): the forker forks the
 *   program's process, which the judge's program side runs as a run alone's does; its tests run in
 *   the batch's one test process, a copy of the harness made before any program or test was read,
 *   which judges each program in turn as a run alone's test process does (the judge's
 *   _test_process) and then answers the run's exit status. It never runs a program's code, and it
 *   gets each program's tests only when that program starts; what the tests leave in it that a
 *   run alone would not carry on (a thread still running, an exit function, a changed recursion
 *   limit, directory or environment) stops the batch. What tests change in a module they imported
 *   stays for the next program's tests (the datasets' tests change none; bench:judge compares
 *   every verdict with the programs judged alone). A program costs one fork, as with the tests
 *   appended, instead of two forks, a second process's page copies and its exit.
 * Neither a program that stopped the batch nor one after it has an answer here: the caller runs
 * those alone. Every program with an answer started from the state a run alone starts from, and
 * nothing another program did could reach it. What the batch cannot share is a run's limits for
 * the whole run (its wall clock, CPU budget and memory cgroup hold for the batch together): a
 * program they stop has no plain exit, and judge.ts takes only plain exits from a batch.
 */

/** How one batched program ended, as the harness saw it. */
export interface BatchedRun {
  /** The exit status, or null when a signal ended it. */
  exitCode: number | null;
  signal: number | null;
  /** Killed at its own wall-clock limit. */
  timedOut: boolean;
  /** A stream passed the sandbox's `maxOutputBytes`; what was kept is the start. */
  truncated: boolean;
  stdout: string;
  stderr: string;
  durationMs: number;
}

export interface BatchProgram {
  code: string;
  timeoutMs: number;
  /** Files beside main.py in the program's own directory (a judged program's harness). */
  files?: Record<string, string>;
  /** What the program reads on stdin, as a run alone would get it (a judged program's tests). */
  stdin?: string;
}

const REPORT_MARKER = "\x1eselfheal-batch";

/** The harness: main.py of the batch run. It reads batch/plan.txt and batch/<i>/main.py. */
const HARNESS = String.raw`
import binascii, os, select, shutil, signal, socket, sys, time, types
# The standard-library modules the behaviour probe imports (behaviour-probe.ts), loaded once here
# instead of in each of its forks (~15 ms each on a VM): a program that imports one finds it
# loaded, as it would after its own first import.
import base64, copy, json

MARK = "\x1eselfheal-batch"
plan = open("batch/plan.txt").read().split("\n")
max_bytes = int(plan[0])
private_ipc = plan[2] == "1"
# Each program's time limit, and "judged" for one whose tests run in the batch's test process.
limits = [line.split(" ") for line in plan[3:] if line]
timeouts = [int(fields[0]) for fields in limits]
judged = [fields[1:] == ["judged"] for fields in limits]
# The bootstrap's end report is for the host; the harness sees each program's end by its exit.
end_report = None
top = os.getcwd()
own_dir = os.path.join(top, "program")
roots = [top] + [root for root in plan[1].split("\t") if root]
roots += [os.environ.get(name) for name in ("HOME", "TMPDIR") if os.environ.get(name)]


def report(*fields):
    sys.stdout.write(" ".join([MARK] + [str(field) for field in fields]) + "\n")
    sys.stdout.flush()


def fingerprint():
    seen = []
    for root in sorted(set(os.path.realpath(root) for root in roots)):
        stack = [root]
        while stack:
            path = stack.pop()
            try:
                entries = list(os.scandir(path))
            except (NotADirectoryError, FileNotFoundError, PermissionError):
                continue
            for entry in entries:
                info = entry.stat(follow_symlinks=False)
                seen.append((entry.path, info.st_mode, info.st_size, info.st_ino, info.st_mtime_ns, info.st_ctime_ns))
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
            if len(seen) > 20000:
                return None
    for name in ("shm", "msg", "sem") if private_ipc else ():
        try:
            with open("/proc/sysvipc/" + name) as table:
                seen.append((name, [line.split()[:4] for line in table.read().splitlines()]))
        except OSError:
            pass
    return sorted(seen, key=repr)


def become_subreaper():
    try:
        import ctypes
        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0
    except Exception:
        return False


def read_programs():
    # Every program's files and stdin (a judged program's tests), read now and taken off the disk:
    # each program gets a directory of its own holding only its files, made just before it starts
    # and removed once it has ended; its stdin reaches it as an unlinked file.
    programs = []
    for index in range(len(timeouts)):
        folder = os.path.join("batch", str(index))
        files = {}
        for name in sorted(os.listdir(folder)):
            with open(os.path.join(folder, name), "rb") as source:
                files[name] = source.read()
            os.remove(os.path.join(folder, name))
        os.rmdir(folder)
        programs.append((files, files.pop(".stdin", None), files.pop(".judged", None)))
    return programs


def enter_child(out_w, err_w, in_r, keep=()):
    os.setpgid(0, 0)
    os.dup2(in_r, 0)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    for fd in os.listdir("/proc/self/fd"):
        if int(fd) > 2 and int(fd) not in keep:
            try:
                os.close(int(fd))
            except OSError:
                pass
    os.chdir(own_dir)


class ForkerGone(Exception):
    pass


class TesterGone(Exception):
    pass


def unlinked_file(content):
    """A descriptor of a file holding content that no path names any more."""
    path = os.path.join(own_dir, ".handoff")
    with open(path, "wb") as handle:
        handle.write(content)
    fd = os.open(path, os.O_RDONLY)
    os.unlink(path)
    return fd


def read_whole(fd):
    """What a file holds, read at its start (two processes may hold the same descriptor), then closed."""
    try:
        return os.pread(fd, os.fstat(fd).st_size, 0)
    finally:
        os.close(fd)


def from_forker():
    message = forker.recv(64)
    if not message:
        # A program killed it (its parent): what is still to run runs alone.
        raise ForkerGone()
    return [int(field) for field in message.split()]


def collect(index, timeout_ms, started, out_r, err_r, handoff):
    """
    How the program ended. handoff: a judged program's descriptors for the test process, which gets
    them with the program process's pid; its verdict then ends the program with that process's end.
    """
    kept = {out_r: bytearray(), err_r: bytearray()}
    truncated = False
    for fd in kept:
        os.set_blocking(fd, False)
    deadline = started + timeout_ms / 1000
    open_fds = [out_r, err_r, forker] + ([tester] if handoff else [])
    pid = None
    ended = None
    timed_out = False
    # The test process's answer (its exit status and whether it is still as it was before the
    # program), and whether it waits for the program process's wait status, which the forker has.
    verdict = None if handoff else ()
    status_asked = False

    def drain(fd):
        nonlocal truncated
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                return True
            if not chunk:
                return False
            room = max_bytes - len(kept[fd])
            if len(chunk) > room:
                truncated = True
            kept[fd] += chunk[:room]

    # The forker says the program's pid, then, once it has reaped it, its wait status and whether
    # it left a process behind. The pipes may stay open after the exit (a process it left behind),
    # so that word, not their end, ends the wait.
    while ended is None or verdict is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        for fd in select.select(open_fds, [], [], remaining)[0]:
            if fd == tester:
                message = tester.recv(64)
                if not message:
                    raise TesterGone()
                if message == b"status":
                    status_asked = True
                else:
                    verdict = [int(field) for field in message.split()[1:]]
            elif fd != forker:
                if not drain(fd):
                    open_fds.remove(fd)
            elif pid is None:
                (pid,) = from_forker()
                if handoff:
                    socket.send_fds(tester, [b"%d" % pid], handoff)
                    for handed in handoff:
                        os.close(handed)
            else:
                ended = from_forker()
                open_fds.remove(forker)
        if status_asked and ended is not None:
            tester.send(b"%d" % ended[0])
            status_asked = False
    if handoff and verdict is None:
        # The tests outlived the program's time (or their own loop did): the test process goes, and
        # with it the batch; what is left runs alone.
        os.kill(tester_pid, signal.SIGKILL)
        if pid is not None:
            os.killpg(pid, signal.SIGKILL)
        raise TesterGone()
    if ended is None:
        if pid is None:
            (pid,) = from_forker()
        os.killpg(pid, signal.SIGKILL)
        ended = from_forker()
    status, left = ended
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    for fd in kept:
        drain(fd)
        os.close(fd)
    duration = (time.monotonic() - started) * 1000
    exit_code = os.waitstatus_to_exitcode(status)
    if handoff:
        # A judged run's exit status is its test process's; one no longer as it was before this
        # program cannot judge the next: this program and the rest run alone.
        exit_code, clean = verdict
        if not clean:
            raise TesterGone()
    report(
        "done", index,
        exit_code if exit_code >= 0 else "-", -exit_code if exit_code < 0 else "-",
        int(timed_out), int(truncated), "%.3f" % duration,
        binascii.b2a_base64(bytes(kept[out_r]), newline=False).decode() or "-",
        binascii.b2a_base64(bytes(kept[err_r]), newline=False).decode() or "-",
    )
    return left == 1


def left_behind():
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return 0
    return 1


if not become_subreaper():
    report("unavailable", "cannot become a child subreaper")
    sys.exit(0)
# Not dumpable (inherited by the forker and each program's process): a program cannot read the
# other programs or their tests out of this process's memory through /proc.
try:
    import ctypes
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
except Exception:
    pass
# The tests' judge (src/tools/judge/python-judge.ts), compiled once here instead of by each judged
# program (~10 ms each), and the modules it imports before it forks, loaded as part of the set-up:
# a judged program's main.py takes the compiled judge (see the run-main lines), any other drops it.
import io, linecache, operator, traceback
try:
    with open("batch/judge.py", "rb") as judge_file:
        judge_text = judge_file.read()
    sys._selfheal_judge = (judge_text, compile(judge_text, os.path.join(own_dir, "${PYTHON_JUDGE_FILE}"), "exec", dont_inherit=True))
except OSError:
    pass
# The judge run already, for judged programs: each one's program process is forked by the forker
# and its tests run in one test process for the whole batch, forked below, so a program costs one
# fork, as with the tests appended, instead of two and a process's page copies and exit.
judge_namespace = None
if any(judged) and getattr(sys, "_selfheal_judge", None) is not None:
    try:
        judge_namespace = {"__name__": "selfheal_judge", "VALUES": None}
        exec(sys._selfheal_judge[1], judge_namespace)
    except BaseException:
        judge_namespace = None
if any(judged) and judge_namespace is None:
    report("unavailable", "the judge did not load")
    sys.exit(0)


def serve_program(source_fd, read_fd, write_fd):
    """A judged program's process: the judge's program side, as a run alone's fork of its test process runs it."""
    settings, _, program = read_whole(source_fd).partition(b"\n")
    judge_namespace["VALUES"] = json.loads(settings)
    # A run alone reaches the judge's program side through the judge's _JUDGE_FRAMES (main.py's
    # frame, its line's lambda and _judge) from the bootstrap's top level, which is not this
    # child's: as many levels fewer here gives the same headroom (a test pins it).
    sys.setrecursionlimit(sys.getrecursionlimit() - judge_namespace["_JUDGE_FRAMES"])
    judge_namespace["_program_process"](os.path.join(own_dir, "main.py"), program, read_fd, write_fd)


# The forker: a copy of the harness, made before any program ran, that forks each program and
# reaps it, and does nothing else. Every page a process writes after it forked is a copy-on-write
# fault (~45 µs on a VM); the harness's own work between programs (output, reports, fingerprints)
# wrote ~250 pages a program when it forked them itself; the forker writes ~75.
forker, forker_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
sys.stdout.flush()
sys.stderr.flush()
forker_pid = os.fork()
if forker_pid == 0:
    forker.close()
    # A child subreaper (which a fork does not inherit), so a process a program leaves behind (even
    # one that left its process group) becomes the forker's child, which it then finds.
    become_subreaper()
    while True:
        message, fds, _, _ = socket.recv_fds(forker_end, 16, 6)
        if not message:
            os._exit(0)
        out_w, err_w, in_r = fds[:3]
        # A judged program's: its values settings and code, and its ends of the channel to the tests.
        serves = fds[3:]
        pid = os.fork()
        if pid == 0:
            try:
                enter_child(out_w, err_w, in_r, serves)
                # Two levels deeper than the bootstrap's own top level (this module's frame and the
                # exec that entered it): the same recursion headroom as a run alone (a test pins it).
                sys.setrecursionlimit(sys.getrecursionlimit() + 2)
            except BaseException:
                os._exit(1)
            if serves:
                try:
                    serve_program(*serves)
                except BaseException:
                    pass
                os._exit(1)
            # The sandbox bootstrap's own lines that run main.py and exit, at the top level as there.
__RUN_MAIN__
            os._exit(1)
        for fd in fds:
            os.close(fd)
        forker_end.send(b"%d" % pid)
        status = os.waitpid(pid, 0)[1]
        forker_end.send(b"%d %d" % (status, left_behind()))
forker_end.close()


def judge_in_turn(channel):
    """
    The batch's test process: a copy of the harness made before any program was read, which runs
    each judged program's tests as a run alone's test process does (the judge's _test_process)
    against that program's process, then answers its exit status and whether it is left as it was
    before (no thread still running, no function registered to run at exit; its recursion limit,
    directory and environment unchanged). What the tests change in a module
    stays for the next program's tests: the datasets' tests change none (bench:judge compares every
    verdict with the programs judged alone).
    """
    import atexit, builtins, linecache, traceback

    signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    path = os.path.join(own_dir, "main.py")
    main_module, stdout, stderr = sys.modules["__main__"], sys.stdout, sys.stderr
    flush_streams = judge_namespace["_flush_streams"]
    limit = sys.getrecursionlimit()
    exit_functions = atexit._ncallbacks()
    environment = dict(os.environ)

    def program_status(pid):
        channel.send(b"status")
        reply = channel.recv(64)
        if not reply:
            os._exit(0)
        return int(reply)

    judge_namespace["_PROGRAM_STATUS"] = program_status
    while True:
        message, fds, _, _ = socket.recv_fds(channel, 64, 6)
        if not message:
            os._exit(0)
        out_w, err_w, tests_fd, source_fd, read_fd, write_fd = fds
        payload = read_whole(tests_fd)
        settings, _, program = read_whole(source_fd).partition(b"\n")
        judge_namespace["VALUES"] = json.loads(settings)
        flush_streams()
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.close(out_w)
        os.close(err_w)
        if "random" in sys.modules:
            # As in a run alone, which a fork reseeds.
            sys.modules["random"].seed()
        clean = True
        try:
            judge_namespace["_test_process"](path, program, int(message), read_fd, write_fd, payload)
            status = 0
        except SystemExit as request:
            # As a run's end takes it; a status os._exit would refuse is left to a run alone.
            status = judge_namespace["_exit_status"](request)
            clean = -(2**31) <= status < 2**31
        except BaseException:
            traceback.print_exc()
            status, clean = 1, False
        threading = sys.modules.get("threading")
        if threading is not None and threading.active_count() > 1:
            clean = False
        if atexit._ncallbacks() != exit_functions:
            # A run alone would run what the tests registered at its end; here it would run at the
            # batch's, after every program: such a program is judged alone.
            clean = False
        flush_streams()
        sys.__dict__.pop("_selfheal_program_process", None)
        builtins.__dict__.pop("@selfheal", None)
        for fd in (read_fd, write_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        sys.modules["__main__"], sys.stdout, sys.stderr = main_module, stdout, stderr
        linecache.cache.pop(path, None)
        if sys.getrecursionlimit() != limit or os.getcwd() != top or os.environ != environment:
            clean = False
        os.dup2(null, 1)
        os.dup2(null, 2)
        channel.send(b"done %d %d" % (status & 0xFF, clean))


tester = tester_pid = None
if any(judged):
    tester, tester_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sys.stdout.flush()
    sys.stderr.flush()
    tester_pid = os.fork()
    if tester_pid == 0:
        tester.close()
        forker.close()
        try:
            judge_in_turn(tester_end)
        finally:
            os._exit(0)
    tester_end.close()
# Read only now, so that the forker, the test process, and every program forked, never held them.
sources = read_programs()
before = fingerprint()
if before is None:
    report("unavailable", "too many files to fingerprint")
    sys.exit(0)
for index, timeout_ms in enumerate(timeouts):
    os.mkdir(own_dir)
    files, stdin, source = sources[index]
    for name, content in files.items():
        with open(os.path.join(own_dir, name), "wb") as code:
            code.write(content)
    in_r = os.open(os.devnull, os.O_RDONLY) if stdin is None else unlinked_file(stdin)
    sources[index] = None
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    handoff = None
    started = time.monotonic()
    if source is None:
        socket.send_fds(forker, [b"go"], [out_w, err_w, in_r])
        os.close(out_w)
        os.close(err_w)
        os.close(in_r)
    else:
        # The program process gets its code and its ends of the channel; the test process, once the
        # forker said the pid, the tests (in_r), the code and the other ends.
        source_fd = unlinked_file(source)
        to_program, from_tests = os.pipe()
        to_tests, from_program = os.pipe()
        program_in = os.open(os.devnull, os.O_RDONLY)
        socket.send_fds(forker, [b"go"], [out_w, err_w, program_in, source_fd, to_program, from_program])
        for fd in (program_in, to_program, from_program):
            os.close(fd)
        handoff = [out_w, err_w, in_r, source_fd, to_tests, from_tests]
    try:
        left = collect(index, timeout_ms, started, out_r, err_r, handoff)
    except ForkerGone:
        report("stopped", index, "the process that forks the programs is gone")
        break
    except TesterGone:
        report("stopped", index, "the test process is gone, or no longer as it was before the program")
        break
    if left:
        report("stopped", index, "a process outlived its program")
        break
    try:
        shutil.rmtree(own_dir)
    except OSError:
        report("stopped", index, "what the program left in its directory could not be removed")
        break
    if fingerprint() != before:
        report("stopped", index, "the file system or IPC changed")
        break
forker.close()
os.waitpid(forker_pid, 0)
if tester is not None:
    tester.close()
    os.waitpid(tester_pid, 0)
`;

/**
 * The part of the sandbox's Python bootstrap that runs main.py (a fresh \`__main__\`, argv, SystemExit,
 * the traceback without its own frame, \`finish\`): each batched program runs through that same text,
 * so it starts and ends as a run alone does.
 */
function runMainPart(): string {
  // Indented into the harness's child branch; the text has no multi-line string for this to break.
  return pythonRunMainSource()
    .split("\n")
    .map((line) => (line === "" ? "" : `            ${line}`))
    .join("\n");
}

/**
 * A program prepared for the judge with its tests in a process of their own (prepare.ts): its judged
 * program's file (the values settings' line, then the program), and the program.
 */
function judgedParts(program: BatchProgram): { source: string; program: string } | null {
  const source = program.files?.[PYTHON_JUDGED_PROGRAM_FILE];
  if (program.code !== PYTHON_JUDGE_LINE || program.files?.[PYTHON_JUDGE_FILE] !== PYTHON_JUDGE || source === undefined)
    return null;
  return { source, program: source.slice(source.indexOf("\n") + 1) };
}

/** What the batch harness reports as one line. */
function parseDone(fields: string[]): { index: number; run: BatchedRun } | null {
  const [, index, exitCode, signal, timedOut, truncated, duration, stdout, stderr] = fields;
  if (index === undefined || stderr === undefined) return null;
  const decode = (text: string) => (text === "-" ? "" : Buffer.from(text, "base64").toString("utf8"));
  return {
    index: Number(index),
    run: {
      exitCode: exitCode === "-" ? null : Number(exitCode),
      signal: signal === "-" ? null : Number(signal),
      timedOut: timedOut === "1",
      truncated: truncated === "1",
      stdout: decode(stdout ?? "-"),
      stderr: decode(stderr),
      durationMs: Number(duration),
    },
  };
}

export interface BatchOptions {
  /** The sandbox's per-stream cap (`maxOutputBytes`), so a batched program hits it where a run would. */
  maxOutputBytes: number;
  /** Wall-clock time the batch run gets beyond the sum of its programs' limits. */
  slackMs?: number;
  /** False: run nothing, answer null for every program (the callers then run each alone). */
  batching?: boolean;
}

/**
 * Runs `programs` in one sandbox run under the isolation rule above. The answer has one entry per
 * program, in order: how it ended, or null where the batch did not run it (stopped before it, or
 * the batch run itself died): the caller runs those alone.
 */
export async function runBatch(
  sandbox: Sandbox,
  programs: readonly BatchProgram[],
  { maxOutputBytes, slackMs = 5_000, batching = true }: BatchOptions,
): Promise<Array<BatchedRun | null>> {
  const results: Array<BatchedRun | null> = programs.map(() => null);
  if (programs.length === 0 || !batching) return results;
  // What separate runs do not share beyond the work dir: outside the process backend, whose runs
  // share the host's /tmp and IPC objects anyway, /tmp, /dev/shm and the IPC namespace are the run's own.
  const shared = sandbox.kind === "process";
  const plan = [maxOutputBytes, shared ? "" : "/tmp\t/dev/shm", shared ? "0" : "1"];
  const files: Record<string, string> = {
    "batch/judge.py": PYTHON_JUDGE,
  };
  const kinds = programs.map((program, index) => {
    const judged = judgedParts(program);
    for (const [name, content] of Object.entries(program.files ?? {}))
      if (judged === null || (name !== PYTHON_JUDGE_FILE && name !== PYTHON_JUDGED_PROGRAM_FILE))
        files[`batch/${index}/${name}`] = content;
    // A judged program's main.py is the program alone, as its process finds it in a run alone once
    // the judge has put it back there; its settings and code go to both of its processes.
    files[`batch/${index}/main.py`] = judged?.program ?? program.code;
    if (judged !== null) files[`batch/${index}/.judged`] = judged.source;
    if (program.stdin !== undefined) files[`batch/${index}/.stdin`] = program.stdin;
    return judged === null ? "" : " judged";
  });
  files["batch/plan.txt"] = [...plan, ...programs.map((program, index) => `${program.timeoutMs}${kinds[index]}`)].join(
    "\n",
  );
  const perProgram = 2 * Math.ceil((maxOutputBytes * 4) / 3) + 256;
  const result = await sandbox.run({
    language: "python",
    code: HARNESS.replace("__RUN_MAIN__", runMainPart()),
    files,
    timeoutMs: programs.reduce((sum, program) => sum + program.timeoutMs, slackMs),
    limits: { maxOutputBytes: Math.min(64 * 1024 * 1024, 4096 + programs.length * perProgram) },
  });
  for (const line of result.stdout.split("\n")) {
    const fields = line.startsWith(`${REPORT_MARKER} `) ? line.slice(REPORT_MARKER.length + 1).split(" ") : [];
    if (fields[0] === "done") {
      const done = parseDone(fields);
      if (done !== null && done.index >= 0 && done.index < programs.length) results[done.index] = done.run;
    } else if (fields[0] === "stopped") {
      // The program that left something behind: alone, the run would have waited for what it left.
      results[Number(fields[1])] = null;
    }
  }
  return results;
}

/** The most programs one batch run takes: past it, a run that dies (a whole-run limit) costs too many reruns. */
const MAX_BATCH = 48;

/**
 * `runBatch` over many programs: split into at least `lanes` batches of at most `MAX_BATCH`, with
 * `lanes` batch runs in flight; the answer is in the programs' order.
 */
export async function runBatches(
  sandbox: Sandbox,
  programs: readonly BatchProgram[],
  options: BatchOptions & { lanes: number },
): Promise<Array<BatchedRun | null>> {
  const size = Math.min(MAX_BATCH, Math.max(1, Math.ceil(programs.length / options.lanes)));
  const chunks: BatchProgram[][] = [];
  for (let start = 0; start < programs.length; start += size) chunks.push(programs.slice(start, start + size));
  const answers = await mapWithConcurrency(chunks, options.lanes, (chunk) => runBatch(sandbox, chunk, options));
  return answers.flat();
}
