import { PYTHON_BOOTSTRAP, PYTHON_JUDGE_MODULES, PYTHON_JUDGE_RUN_FILE } from "../host/bootstrap.js";
import { SANDBOX_WORK_DIR } from "../host/system-view.js";

/** Where the fork server sees the host's runs folder (`ForkServer`): each run's work dir is under it. */
export const FORK_RUNS_MOUNT = "/runs";

/**
 * The Python fork server: started once inside a bwrap sandbox that keeps its capabilities (in its
 * own user namespace, never the host's), it makes one process per run, each as a cold bwrap run
 * gets it, and never runs a line of a program itself.
 *
 * Ahead of each run the server clones a child into new mount, pid, IPC, UTS and network
 * namespaces: the next run's pid 1, as bwrap's init is, which forks the program's process (pid 2)
 * at once. That process leaves a session of its own, drops every capability, sets no_new_privs and
 * loads the seccomp filter; both then wait, knowing nothing of any run (a spare pair).
 *
 * The host opens five connections to its socket for a run, each starting with one JSON line,
 * `{"run": ID, "role": ROLE}`: `in`, `out`, `err` and `control` become the run's fds 0-3, and
 * `status`'s line also carries the request (`dir`, `tmp`, `env`, `settings`, `tmpBytes`). Once all
 * five are in, the server writes `p PID` (the spare's pid 1, here) on `status`, hands the five and
 * the request to the spare, forgets the run and makes the next spare.
 *
 * Pid 1 waits for `c` on `status` (the host has put both processes in the run's cgroups by then),
 * mounts the run's /proc, /work, /tmp and /dev/shm, hides the runs folder, and passes fds 0-3 and
 * the request to the program's process, which takes the run's environment and runs the bootstrap:
 * it applies the rlimits, writes "r" on fd 3 and waits for its go as a pre-warmed interpreter
 * does. Pid 1 reaps what the program leaves and, when the program exits, writes `x STATUS` (an
 * exit code, or minus the signal) on `status` and exits, which ends the namespace and everything
 * in it.
 */
export const PYTHON_FORK_SERVER = `
import builtins, ctypes, gc, json, os, select, signal, socket, sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]

SOCKET_PATH = sys.argv[1]
RUNS = "${FORK_RUNS_MOUNT}"
FILTER_FD = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2] != "-" else None
JUDGE_PATH = sys.argv[3] if len(sys.argv) > 3 else None
ROLES = ("in", "out", "err", "control", "status")
NAMESPACES = 0x20000 | 0x20000000 | 0x8000000 | 0x4000000 | 0x40000000  # mount, pid, ipc, uts, net
SYS_CLONE = {"x86_64": 56, "aarch64": 220}.get(os.uname().machine)
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_RDONLY, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 1, 4096, 0x4000, 1 << 18
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, PR_CAPBSET_DROP, PR_CAP_AMBIENT = 38, 22, 24, 47

BOOTSTRAP = compile(${JSON.stringify(PYTHON_BOOTSTRAP)}, "<string>", "exec")

# The filter, read once; each program loads it last, after its mounts.
seccomp_program = None
if FILTER_FD is not None:
    chunks = []
    while True:
        chunk = os.read(FILTER_FD, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(FILTER_FD)
    filter_bytes = b"".join(chunks)

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

    filter_buffer = ctypes.create_string_buffer(filter_bytes, len(filter_bytes))
    seccomp_program = SockFprog(len(filter_bytes) // 8, ctypes.cast(filter_buffer, ctypes.c_char_p))


# The tests' judge, compiled once here (it appears in the support dir with the first judged run)
# instead of by every run's bootstrap: each fork finds it compiled and its modules imported.
judge = None


def load_judge():
    # True where the judge is compiled now, for the first time.
    global judge
    if judge is not None or JUDGE_PATH is None:
        return False
    try:
        with open(JUDGE_PATH, "rb") as judge_file:
            text = judge_file.read()
    except OSError:
        return False
    modules_before = set(sys.modules)
    code = compile(text, "${SANDBOX_WORK_DIR}/${PYTHON_JUDGE_RUN_FILE}", "exec", dont_inherit=True)
    for name in ${JSON.stringify(PYTHON_JUDGE_MODULES)}:
        __import__(name)
    judge = (text, code, set(sys.modules) - modules_before)
    return True


def check(result, what):
    if result != 0:
        raise OSError(ctypes.get_errno(), what)


def mount(source, target, kind, flags, data=None):
    check(libc.mount(source and source.encode(), target.encode(), kind and kind.encode(), flags, data and data.encode()), "mount " + target)


def clone_into_namespaces():
    # fork(2) with new namespaces for the child, so that it is the namespace's pid 1 in one step;
    # CPython's own before- and after-fork work is called around it as os.fork does.
    ctypes.pythonapi.PyOS_BeforeFork()
    pid = libc.syscall(SYS_CLONE, ctypes.c_ulong(NAMESPACES | signal.SIGCHLD), None, None, None, ctypes.c_ulong(0))
    errno = ctypes.get_errno()
    if pid == 0:
        ctypes.pythonapi.PyOS_AfterFork_Child()
    else:
        ctypes.pythonapi.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(errno, "clone")
    return pid


def drop_privileges():
    for capability in range(64):
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            break
    libc.prctl(PR_CAP_AMBIENT, 4, 0, 0, 0)  # PR_CAP_AMBIENT_CLEAR_ALL
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    check(libc.capset(header, data), "capset")
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    if seccomp_program is not None:
        check(libc.prctl(PR_SET_SECCOMP, 2, ctypes.addressof(seccomp_program), 0, 0), "seccomp")


def spare_program(channel):
    # The run's program, made ahead of its run: it leaves pid 1's session and drops every privilege
    # now, then waits for its run's descriptors (fds 0-3) and request.
    os.setsid()
    drop_privileges()
    message, fds, _, _ = socket.recv_fds(channel, 1 << 20, 4)
    if len(fds) != 4:
        os._exit(0)
    request = json.loads(message)
    for index, fd in enumerate(fds):
        os.dup2(fd, index)
    for fd in fds:
        if fd > 3:
            os.close(fd)
    channel.close()
    os.chdir("/work")
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv[:] = ["-c"] + request["settings"]
    # The server's frames under this one are not the program's: a cold run's bootstrap starts at
    # the bottom of its stack, and the program gets the same recursion headroom as there.
    depth = 0
    frame = sys._getframe()
    while frame is not None:
        depth += 1
        frame = frame.f_back
    sys.setrecursionlimit(sys.getrecursionlimit() + depth)
    scope = {"__name__": "__main__", "__builtins__": builtins}
    if judge is not None:
        # As the bootstrap's own "judge=" setting would leave them; a run that is not judged drops them.
        sys._selfheal_judge = judge[:2]
        scope["judge_modules"] = judge[2]
    exec(BOOTSTRAP, scope)
    os._exit(0)


def send_status(status, text):
    try:
        status.sendall(text.encode())
    except OSError:
        pass


def close_all_but(keep):
    for fd in [int(name) for name in os.listdir("/proc/self/fd")]:
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
    null = os.open("/dev/null", os.O_RDWR)
    for fd in range(3):
        os.dup2(null, fd)
    os.close(null)


def spare_init(channel):
    # A run's pid 1, made ahead of its run in fresh namespaces, with the program's process (pid 2)
    # under it. Nothing of the server's that is not its own goes with it.
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    close_all_but({channel.fileno()})
    os.setsid()
    init_end, program_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    program = os.fork()
    if program == 0:
        init_end.close()
        channel.close()
        try:
            spare_program(program_end)
        except BaseException as error:
            os.write(2, ("selfheal: the run could not start: %s\\n" % error).encode())
        os._exit(1)
    program_end.close()
    # Both processes exist: the server may name them to the host now.
    channel.send(b"s")
    message, fds, _, _ = socket.recv_fds(channel, 1 << 20, len(ROLES))
    channel.close()
    if len(fds) != len(ROLES):
        os._exit(0)
    connections = {role: socket.socket(fileno=fd) for role, fd in zip(ROLES, fds)}
    request = json.loads(message)
    status = connections["status"]
    # The host has put both processes in the run's cgroups when it says "c".
    if status.recv(1) != b"c":
        os._exit(0)
    try:
        mount(None, "/", None, MS_REC | MS_PRIVATE)
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        mount(RUNS + "/" + request["dir"], "/work", None, MS_BIND | MS_REC)
        if request.get("tmp"):
            mount(RUNS + "/" + request["tmp"], "/tmp", None, MS_BIND | MS_REC)
        else:
            mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=%d,mode=1777" % request["tmpBytes"])
        mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=%d,mode=1777" % request["tmpBytes"])
        # Other runs' folders and the server's socket are under it: covered, not unmounted (its
        # mounts came from the host and are locked to it).
        mount("tmpfs", RUNS, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, "size=4096,mode=0555")
        socket.send_fds(init_end, [message], [connections[role].fileno() for role in ROLES[:4]])
    except OSError as error:
        send_status(status, "e %s\\n" % error)
        os._exit(1)
    init_end.close()
    for role in ROLES[:4]:
        connections[role].close()
    while True:
        try:
            pid, wait_status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(1)
        if pid == program:
            break
    send_status(status, "x %d\\n" % os.waitstatus_to_exitcode(wait_status))
    os._exit(0)


def read_header(connection):
    # One line, read without taking a byte past it: what follows is the run's (its stdin, say).
    peeked = connection.recv(4096, socket.MSG_PEEK)
    if not peeked:
        return False
    end = peeked.find(b"\\n")
    if end < 0:
        return None
    return json.loads(connection.recv(end + 1))


def serve():
    # A run's pid 1 whose program ended is reaped by the kernel; the run's own set this back.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        os.unlink(SOCKET_PATH)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(SOCKET_PATH)
    listener.listen(128)
    os.write(1, b"ready %d\\n" % os.getpid())
    make_spare()
    waiting = []
    runs = {}
    while True:
        readable, _, _ = select.select([0, listener] + waiting, [], [])
        if 0 in readable and not os.read(0, 64):
            # The host closed our stdin: it is gone, or done with us.
            os._exit(0)
        if listener in readable:
            connection, _ = listener.accept()
            waiting.append(connection)
        for connection in [each for each in readable if each in waiting]:
            try:
                header = read_header(connection)
            except (OSError, ValueError):
                header = False
            if header is None:
                continue
            waiting.remove(connection)
            if header is False or header.get("role") not in ROLES:
                connection.close()
                continue
            run = runs.setdefault(str(header.get("run")), {"connections": {}, "request": None})
            run["connections"][header["role"]] = connection
            if header["role"] == "status":
                run["request"] = header
            if len(run["connections"]) == len(ROLES):
                del runs[str(header["run"])]
                start_run(run["connections"], run["request"])


spare = None


def make_spare():
    # The next run's two processes, made now, so that a run asks for them ready; a collection in
    # a fork would touch, and so copy, every page that holds an object existing now.
    global spare
    gc.freeze()
    server_end, spare_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        pid = clone_into_namespaces()
    except OSError as error:
        server_end.close()
        spare_end.close()
        return "e %s\\n" % error
    if pid == 0:
        try:
            server_end.close()
            spare_init(spare_end)
        finally:
            os._exit(1)
    spare_end.close()
    spare = (pid, server_end)
    return None


def discard_spare():
    global spare
    if spare is not None:
        spare[1].close()
        spare = None


def take_spare():
    # A spare whose two processes are both made, or None with what went wrong.
    global spare
    for _ in range(2):
        if spare is None:
            failure = make_spare()
            if failure is not None:
                return None, failure
        pid, channel = spare
        spare = None
        try:
            if channel.recv(1) == b"s":
                return (pid, channel), None
        except OSError:
            pass
        channel.close()
    return None, "e the run's processes could not be made\\n"


def start_run(connections, request):
    try:
        if load_judge():
            # Made before the judge was compiled here: the run gets a spare that has it.
            discard_spare()
    except BaseException:
        pass
    taken, failure = take_spare()
    status = connections["status"]
    if taken is not None:
        pid, channel = taken
        send_status(status, "p %d\\n" % pid)
        try:
            socket.send_fds(channel, [json.dumps(request).encode()], [connections[role].fileno() for role in ROLES])
        except OSError as error:
            send_status(status, "e %s\\n" % error)
        channel.close()
    else:
        send_status(status, failure)
    for connection in connections.values():
        connection.close()
    make_spare()


serve()
`;
