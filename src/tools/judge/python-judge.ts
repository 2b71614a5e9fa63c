import {
  PYTHON_JUDGE_RUN_FILE,
  PYTHON_JUDGED_PROGRAM_FILE,
  PYTHON_OBSERVABLE_SHUTDOWN,
  stampJudge,
} from "../../sandbox/host/bootstrap.js";
import { PYTHON_VALUES_PARTS } from "../runtime-values/python-harness.js";

/** The judge's file beside main.py; also the file name its cached compilation carries (bootstrap.ts, batch.ts). */
export const PYTHON_JUDGE_FILE = PYTHON_JUDGE_RUN_FILE;

/**
 * The Python judge that runs the tests in a process of their own (see docs/security.md, "What a pass
 * proves"). main.py's one line runs this file, which puts the program back in main.py's place and
 * forks: the child loads the program as `__main__` and then serves the calls the tests make; the
 * parent, made non-dumpable first, reads the tests and the completion secret from stdin only after
 * the fork (so the program never holds them), runs the tests against proxies of the program's
 * names, compares what comes back as plain data decoded by its own code, and alone writes the
 * completion mark. The judged program's file beside it holds `VALUES` (the runtime-values
 * settings, or null) as a JSON line and then the program. The text begins with its stamp
 * (`stampJudge`), by which main.py's line knows a compiled copy of it.
 */
export const PYTHON_JUDGE = stampJudge(String.raw`import os, sys


def _judge(harness_path, settings_and_program):
    """
    Splits this run in two processes. The program process loads the program as __main__ and then
    serves the calls the tests make; the test process (this one, which main.py runs) reads the
    tests, the completion secret and the task's helpers from stdin after the fork, so the program
    never holds them, and runs them against proxies of the program's names. Values cross as plain
    data of exact builtin types, decoded here by our own decoder; anything else stays a handle.
    """
    path = sys.modules["__main__"].__file__
    # The judged program's file: this run's values settings as a JSON line, then the program.
    program = settings_and_program.partition(b"\n")[2]
    # The judge's files, which main.py's line read (the judge's own where the host wrote it): they
    # go before the program runs.
    leftovers = [harness_path, os.path.join(os.path.dirname(harness_path), "${PYTHON_JUDGED_PROGRAM_FILE}")]
    # Read again where the bootstrap went ahead: main.py's line reset this namespace's VALUES since.
    _settings(settings_and_program)
    if _STARTED:
        # The bootstrap gave the program process forked ahead its program at the go (_go_ahead).
        pid, to_tests, from_tests = _STARTED.pop()
    elif _AHEAD:
        pid, to_tests, from_tests = _start_ahead(path, settings_and_program, leftovers)
    else:
        _program_in_place(path, program, leftovers)
        # Before the fork, so that both processes have it: this one cannot be traced or read through
        # /proc by a process of the same uid without CAP_SYS_PTRACE, which no sandboxed program holds.
        _not_dumpable()
        to_tests, from_program = os.pipe()
        to_program, from_tests = os.pipe()
        _flush_streams()
        pid = os.fork()
        if pid == 0:
            os.close(to_tests)
            os.close(from_tests)
            _program_process(path, program, to_program, from_program)
        os.close(to_program)
        os.close(from_program)
    import signal

    # Signals reach this process only as pending: none can end a test early in a way that passes.
    signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    _test_process(path, program, pid, to_tests, from_tests)


def _settings(settings_and_program):
    """
    This run's values settings, from the judged program's first line; and everything the test side
    needs loaded before the program runs: a module it imported later would come from a path the
    program may have written to.
    """
    global VALUES
    import builtins, io, json, linecache, operator, select, signal, traceback, types

    VALUES = json.loads(settings_and_program.partition(b"\n")[0])


def _start_ahead(path, settings_and_program, leftovers):
    """
    The program process forked while the interpreter waited for its go (_fork_ahead), both made not
    dumpable before, takes its program and VALUES (read by _settings): it loads the program while
    this process reads the tests.
    """
    import json

    pid, to_tests, from_tests, start = _AHEAD.pop()
    message = json.dumps([path, VALUES, leftovers]).encode() + b"\0" + settings_and_program.partition(b"\n")[2]
    view = memoryview(message)
    try:
        while view:
            view = view[os.write(start, view) :]
    finally:
        os.close(start)
    return pid, to_tests, from_tests


def _go_ahead(path):
    """
    At the go of a judged run whose judge the host left out (this interpreter holds it compiled): the
    program process forked ahead takes its program now, before main.py's line has run. The line
    then takes the judged program's text from here, as its file is gone by then.
    """
    judged_path = os.path.join(os.path.dirname(path), "${PYTHON_JUDGED_PROGRAM_FILE}")
    with open(judged_path, "rb") as handle:
        judged = handle.read()
    sys._selfheal_judged_program = judged
    _settings(judged)
    _STARTED.append(_start_ahead(path, judged, [judged_path]))


def _program_in_place(path, program, leftovers):
    """main.py becomes the program alone, as the program would find itself run on its own."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            view = memoryview(program)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
    except OSError:
        pass
    for leftover in leftovers:
        try:
            os.unlink(leftover)
        except OSError:
            pass


# The program's process of the next judged run, forked by a warm interpreter before its go: the
# fork and the first writes to the pages both processes then share (a copy each, ~20 us on this VM)
# happen off the run's clock. It holds nothing of any run until _judge sends it the program.
_AHEAD = []
# That process once the bootstrap gave it its program at the go (_go_ahead), for _judge to take.
_STARTED = []
# Whether the interpreter was dumpable before _fork_ahead made it not: a run that is not judged gets it back.
_DUMPABLE = None

# The program process's wait status where this process is not its parent (a batch's test process,
# src/benchmark/batch.ts, which judges programs its forker forked): a function of the pid.
_PROGRAM_STATUS = None

# What _judge's callers add above it: main.py's module frame, the line's lambda and _judge itself.
_JUDGE_FRAMES = 3


def _fork_ahead(touch=True):
    """
    Forks the program's process for the run this interpreter waits for (the bootstrap calls it
    where the judge is compiled ahead). Both processes then touch their memory while they wait,
    unless a run executes meanwhile (touch false), whose CPU that would take.
    """
    global _DUMPABLE
    # Not dumpable from now, both processes (see _judge): the test process is, before the program runs.
    _DUMPABLE = _not_dumpable()
    to_tests, from_program = os.pipe()
    to_program, from_tests = os.pipe()
    start_read, start_write = os.pipe()
    _flush_streams()
    pid = os.fork()
    if pid == 0:
        try:
            for fd in (to_tests, from_tests, start_write):
                os.close(fd)
            # The control pipe is the host's to the interpreter, which never reaches this process.
            try:
                os.close(3)
            except OSError:
                pass
            if touch:
                _touch_memory()
            chunks = []
            while True:
                chunk = os.read(start_read, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
            os.close(start_read)
            head, _, program = b"".join(chunks).partition(b"\0")
            if not head:
                os._exit(0)
            import json

            path, values, leftovers = json.loads(head)
            globals()["VALUES"] = values
            _program_in_place(path, program, leftovers)
            # The frames a fork in _judge would have above this one: the same recursion headroom.
            sys.setrecursionlimit(max(1, sys.getrecursionlimit() - _JUDGE_FRAMES + 1))
        except BaseException:
            os._exit(1)
        _program_process(path, program, to_program, from_program)
    for fd in (to_program, from_program, start_read):
        os.close(fd)
    if touch:
        _touch_memory()
    _AHEAD.append((pid, to_tests, from_tests, start_write))


def _discard_ahead():
    """The run is not judged (or by another judge): the process forked for it goes before the program runs."""
    import signal

    while _AHEAD:
        pid, *fds = _AHEAD.pop()
        for fd in fds:
            os.close(fd)
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except OSError:
            pass
    if _DUMPABLE == 1:
        # As the program would find its process run alone.
        _prctl(4, 1)


def _touch_memory():
    """
    Copies now the pages this process shares with the other since the fork, which each first write
    would copy on the clock, a fault each (~20 us on this VM): every private writable mapping at
    once where the kernel can (MADV_POPULATE_WRITE, Linux 5.14), else what a collection visits.
    """
    import gc

    gc.unfreeze()
    gc.collect()
    try:
        import _ctypes

        class Pointer(_ctypes._SimpleCData):
            _type_ = "P"

        class Size(_ctypes._SimpleCData):
            _type_ = "L"

        madvise = _ctypes.dlsym(_ctypes.dlopen(None), "madvise")
        with open("/proc/self/maps", "rb") as maps:
            regions = [line.split(None, 2)[:2] for line in maps]
        for span, mode in regions:
            if mode == b"rw-p":
                start, end = (int(bound, 16) for bound in span.split(b"-"))
                _ctypes.call_function(madvise, (Pointer(start), Size(end - start), 23))
    except Exception:
        pass


def _prctl(option, value):
    try:
        import _ctypes

        return _ctypes.call_function(_ctypes.dlsym(_ctypes.dlopen(None), "prctl"), (option, value, 0, 0, 0))
    except Exception:
        import ctypes

        return ctypes.CDLL(None).prctl(option, value, 0, 0, 0)


def _not_dumpable():
    """Makes this process not dumpable (PR_SET_DUMPABLE); whether it was (PR_GET_DUMPABLE)."""
    dumpable = _prctl(3, 0)
    _prctl(4, 0)
    return dumpable


# ---- the channel: length-prefixed JSON frames over a pair of pipes, either side may call ----

class _Channel:
    def __init__(self, read_fd, write_fd, serve):
        import json

        self.read_fd, self.write_fd, self.serve = read_fd, write_fd, serve
        self.dumps = json.JSONEncoder(ensure_ascii=True, allow_nan=True, separators=(",", ":")).encode
        self.loads = json.loads
        self.buffer = b""

    def send(self, message):
        data = self.dumps(message).encode()
        # The header and the body in turn, the body through a view: no copy of a 100 MB answer.
        for part in (len(data).to_bytes(4, "big"), data):
            view = memoryview(part)
            while view:
                view = view[os.write(self.write_fd, view) :]

    def receive(self):
        # The header first, then the body read straight into a buffer of its size: a 100 MB answer
        # costs one copy, not one per read.
        head = self.read_exactly(4)
        if head is None:
            return None
        body = self.read_exactly(int.from_bytes(head, "big"))
        return None if body is None else self.loads(body)

    def read_exactly(self, size):
        out = bytearray(size)
        have = min(size, len(self.buffer))
        out[:have] = self.buffer[:have]
        self.buffer = self.buffer[have:]
        view = memoryview(out)
        while have < size:
            count = os.readv(self.read_fd, [view[have:]])
            if count == 0:
                return None
            have += count
        return out

    def request(self, message):
        """Sends a request and serves the other side's requests (callbacks) until its reply comes."""
        self.send(["q", message])
        while True:
            incoming = self.receive()
            if incoming is None:
                raise EOFError
            if incoming[0] == "a":
                return incoming[1]
            self.send(["a", self.serve(incoming[1])])


# ---- the program process ----

_PLAIN_SCALARS = (type(None), bool, int, float, str)
# Past ~4300 digits Python refuses to write an int as decimal text (JSON's form): such an int
# crosses in hex.
_BIG_INT_BITS = 14000


def _program_process(path, program, read_fd, write_fd):
    import builtins, traceback, types

    # The run's stdin holds the tests: this process never reads it.
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    status = 0
    module = types.ModuleType("__main__")
    module.__file__ = path
    module.__cached__ = None
    module.__builtins__ = builtins
    sys.modules["__main__"] = module
    sys.argv[:] = ["main.py"]
    values = None
    try:
        values, tree = _with_values(program, path, program, 1 << 30, False)
        code = compile(program if tree is None else tree, path, "exec", dont_inherit=True)
        exec(code, module.__dict__)
    except SystemExit as request:
        _program_finish(_exit_status(request))
    except BaseException as error:
        trace = _program_trace(error.__traceback__, path)
        if isinstance(error, SyntaxError):
            trace = None
        _write_values(values, error, trace, None)
        traceback.print_exception(type(error), error, trace)
        _program_finish(1)
    side = _ProgramSide(module, path, values)
    channel = _Channel(read_fd, write_fd, side.serve)
    side.channel = channel
    _flush_streams()
    # The builtins' names the program defines as its own: the tests take the builtin, and say so.
    shadowing = sorted(
        name
        for name, value in list(module.__dict__.items())
        if type(name) is str and not name.startswith("__") and getattr(builtins, name, value) is not value
    )
    channel.send(["ready", shadowing])
    while True:
        incoming = channel.receive()
        if incoming is None:
            break
        if incoming[1][0] == "end":
            # Its end said once its output is written: the test process need not wait out this
            # process's exit (freeing its memory, 1-3 ms), which it otherwise would.
            _observable_shutdown()
            try:
                channel.send(["a", "ended"])
                if incoming[1][1:2] == [True]:
                    # The exit (freeing this process's memory: 1-3 ms of a CPU the test process may
                    # share) waits until the test process closes the channel, after the run's end
                    # report: it asks so only where it watches for this exit too.
                    os.read(read_fd, 1)
            finally:
                os._exit(0)
        channel.send(["a", side.serve(incoming[1])])
    _program_finish(0)


def _with_values(source, path, raw, tests_from, calls):
    """The runtime-values state of one side and its rewritten tree, or (None, None) when values are off."""
    if VALUES is None:
        return None, None
    import builtins

    config = dict(VALUES, asserts=b"assert" in source.encode() if type(source) is str else b"assert" in source)
    config.update(testsFrom=tests_from, testsTo=1 << 30, calls=calls and VALUES["calls"])
    state = {"asserts": {}, "checks": {}, "calls": [], "dropped": 0, "open": {}, "config": config, "path": path}
    state.update(code=None, raw=raw)
    tree = None
    if config["asserts"] or config["calls"]:
        import _ast

        tree = compile(source, path, "exec", _ast.PyCF_ONLY_AST, dont_inherit=True)
        tree = _part(_REWRITE, "<selfheal>")["rewrite"](tree, config, state["checks"])
    builtins.__dict__["@selfheal"] = _Taps(state)
    return state, tree


def _values_block(values, error, trace, remote):
    if values is None:
        return None
    try:
        return _part(_FAILURE, "<selfheal>")["values_block"](values, error, trace, remote)
    except Exception:
        return None


def _write_values(values, error, trace, remote):
    block = _values_block(values, error, trace, remote)
    if block:
        _flush_streams()
        try:
            os.write(2, block)
        except OSError:
            pass


def _exit_status(request):
    status = request.code
    if status is None:
        return 0
    if isinstance(status, int):
        return status
    print(status, file=sys.stderr)
    return 1


${PYTHON_OBSERVABLE_SHUTDOWN}

def _program_finish(status):
    # As an interpreter that ran the program to its end.
    _observable_shutdown()
    os._exit(status & 0xFF if type(status) is int else 1)


def _encode_flat(value, kind):
    """bytes, bytearray and complex as the wire carries them, from either side; None for any other kind."""
    if kind is bytes:
        return ["B", value.hex()]
    if kind is bytearray:
        return ["Y", value.hex()]
    if kind is complex:
        return ["C", value.real, value.imag]
    return None


def _program_trace(trace, path):
    """The traceback from the program's first frame on."""
    while trace is not None and trace.tb_frame.f_code.co_filename != path:
        trace = trace.tb_next
    return trace


_BUILTIN_OPERATIONS = {
    "getattr": getattr, "setattr": setattr, "delattr": delattr, "len": len, "iter": iter, "next": next,
    "repr": repr, "str": str, "format": format, "reversed": reversed, "dir": dir,
}


class _Callback:
    """
    An object of the tests handed to the program (a function, a sink with methods): calling it or
    reading its attributes runs in the test process, which the program waits on.
    """

    __slots__ = ("_side", "_id")

    def __init__(self, side, ident):
        object.__setattr__(self, "_side", side)
        object.__setattr__(self, "_id", ident)

    def _ask(self, request):
        side = object.__getattribute__(self, "_side")
        _flush_streams()
        reply = side.channel.request(request)
        if reply[0] == "ok":
            return side.decode(reply[1])
        raise _builtin_exception(reply[1])(*reply[2])

    def __call__(self, *args, **kwargs):
        side = object.__getattribute__(self, "_side")
        encoded = {key: side.encode(value) for key, value in kwargs.items()}
        return self._ask(["call", object.__getattribute__(self, "_id"), [side.encode(arg) for arg in args], encoded])

    def __getattr__(self, name):
        return self._ask(["getattr", object.__getattribute__(self, "_id"), name])

    def _op(self, name, *args):
        side = object.__getattribute__(self, "_side")
        return self._ask(["op", object.__getattribute__(self, "_id"), name, [side.encode(arg) for arg in args]])

    # An iterable of the tests (a generator, a dict's keys, an object of theirs with __iter__) is
    # iterated by the test process, one item a request.
    def __iter__(self):
        return self._op("iter")

    def __next__(self):
        return self._op("next")

    def __len__(self):
        return self._op("len")

    def __bool__(self):
        return self._op("bool")

    def __contains__(self, item):
        return self._op("contains", item)

    def __getitem__(self, key):
        return self._op("getitem", key)

    def __repr__(self):
        return "<an object of the tests>"


# What the program may do to an object of the tests besides calling it and reading its public names,
# each done by the test process's own builtins.
_TEST_OBJECT_OPERATIONS = {
    "iter": iter, "next": next, "len": len, "bool": bool,
    "contains": lambda target, item: item in target, "getitem": lambda target, key: target[key],
}


def _builtin_exception(name):
    import builtins

    found = getattr(builtins, name, None)
    return found if isinstance(found, type) and issubclass(found, BaseException) else RuntimeError


class _ProgramSide:
    def __init__(self, module, path, values):
        import operator

        self.module, self.path, self.values = module, path, values
        self.objects = {}
        self.operator = operator
        self.channel = None

    # What crosses: exact builtin types as plain data, everything else as a handle.
    def encode(self, value, depth=0, seen=None):
        kind = type(value)
        if kind is int and value.bit_length() > _BIG_INT_BITS:
            return ["Z", hex(value)]
        if kind in _PLAIN_SCALARS:
            return value
        if depth > 64:
            return self.handle(value)
        if seen is None:
            seen = set()
        if kind in (list, tuple, set, frozenset, dict):
            if id(value) in seen:
                return self.handle(value)
            seen.add(id(value))
            try:
                if kind is dict:
                    out = ["D"]
                    for key, item in value.items():
                        out.append(self.encode(key, depth + 1, seen))
                        out.append(self.encode(item, depth + 1, seen))
                    return out
                tag = {list: "L", tuple: "T", set: "S", frozenset: "F"}[kind]
                return [tag] + [self.encode(item, depth + 1, seen) for item in value]
            finally:
                seen.discard(id(value))
        flat = _encode_flat(value, kind)
        if flat is not None:
            return flat
        known = self.known(value, kind, depth, seen)
        if known is not None:
            return known
        return self.handle(value)

    def known(self, value, kind, depth, seen):
        """Values of the standard library and numpy that the test side rebuilds with its own code."""
        module = getattr(kind, "__module__", None)
        name = getattr(kind, "__qualname__", None)
        try:
            if module == "collections":
                if name in ("Counter", "OrderedDict"):
                    return ["X", name, self.encode(dict(value), depth + 1, seen)]
                if name == "defaultdict":
                    return ["X", name, self.encode(dict(value), depth + 1, seen)]
                if name == "deque":
                    return ["X", name, self.encode(list(value), depth + 1, seen)]
            if module == "decimal" and name == "Decimal":
                return ["X", name, str(value)]
            if module == "fractions" and name == "Fraction":
                return ["X", name, [value.numerator, value.denominator]]
            if module == "datetime" and name in ("date", "datetime", "time", "timedelta"):
                if name == "timedelta":
                    return ["X", name, [value.days, value.seconds, value.microseconds]]
                if getattr(value, "tzinfo", None) is None:
                    return ["X", name, value.isoformat()]
            if isinstance(value, tuple) and hasattr(kind, "_fields") and tuple in kind.__bases__:
                fields = [field for field in kind._fields if type(field) is str]
                return ["N", kind.__name__, fields, [self.encode(item, depth + 1, seen) for item in tuple.__iter__(value)]]
            if module == "numpy":
                return self.numpy(value, kind)
        except Exception:
            return None
        return None

    def numpy(self, value, kind):
        dtype = getattr(value, "dtype", None)
        if dtype is None or dtype.hasobject or dtype.kind not in "biufcSUM?":
            return None
        if kind.__name__ == "ndarray":
            return ["A", dtype.str, list(value.shape), value.tobytes(order="C").hex()]
        return ["V", dtype.str, value.tobytes().hex()]

    def handle(self, value):
        key = id(value)
        self.objects[key] = value
        kind = type(value)
        if isinstance(value, type):
            if issubclass(value, BaseException):
                return ["H", key, "exception", self.exception_chain(value)]
            return ["H", key, "class", value.__qualname__]
        if isinstance(value, types_module().ModuleType):
            return ["M", value.__name__, key]
        name = getattr(value, "__qualname__", None) if callable(value) else None
        return ["H", key, "object", name if type(name) is str else kind.__qualname__]

    def exception_chain(self, cls):
        """The class and its program-defined bases, innermost first, ending in the builtin it derives from."""
        import builtins

        chain = []
        for base in cls.__mro__:
            if getattr(builtins, base.__name__, None) is base:
                chain.append(base.__name__)
                break
            self.objects[id(base)] = base
            chain.append([id(base), base.__qualname__])
        return chain

    def decode(self, data, writeback=None):
        if type(data) is not list:
            return data
        tag = data[0]
        if tag == "L":
            value = [self.decode(item) for item in data[1:]]
            if writeback is not None:
                writeback.append(value)
            return value
        if tag == "T":
            return tuple(self.decode(item) for item in data[1:])
        if tag == "S":
            value = {self.decode(item) for item in data[1:]}
            if writeback is not None:
                writeback.append(value)
            return value
        if tag == "F":
            return frozenset(self.decode(item) for item in data[1:])
        if tag == "D":
            value = {self.decode(data[index]): self.decode(data[index + 1]) for index in range(1, len(data), 2)}
            if writeback is not None:
                writeback.append(value)
            return value
        if tag == "B":
            return bytes.fromhex(data[1])
        if tag == "Y":
            value = bytearray.fromhex(data[1])
            if writeback is not None:
                writeback.append(value)
            return value
        if tag == "C":
            return complex(data[1], data[2])
        if tag == "Z":
            return int(data[1], 16)
        if tag == "H":
            return self.objects[data[1]]
        if tag == "K":
            return _Callback(self, data[1])
        if tag == "G":
            # A value the test side rebuilt from the standard library: rebuild it here as well.
            return self.rebuild(data)
        raise ValueError("unknown tag")

    def rebuild(self, data):
        import importlib

        module = importlib.import_module(data[1])
        return getattr(module, data[2])(*[self.decode(item) for item in data[3]])

    def state(self, value, depth=0):
        """What the test side compares a handle by: its plain data, never its own __eq__."""
        kind = type(value)
        if depth > 16:
            return ["O", kind.__qualname__, id(value)]
        for base in (int, float, complex, str, bytes, bytearray, tuple, list, dict, set, frozenset):
            if isinstance(value, base):
                return ["P", self.encode(base(value))]
        fields = getattr(value, "__dict__", None)
        if isinstance(fields, dict):
            items = [[name, self.state(item, depth + 1)] for name, item in fields.items() if type(name) is str]
            return ["O", kind.__qualname__, items]
        slots = [name for cls in kind.__mro__ for name in getattr(cls, "__slots__", ()) if type(name) is str]
        if slots:
            items = [[name, self.state(getattr(value, name), depth + 1)] for name in slots if hasattr(value, name)]
            return ["O", kind.__qualname__, items]
        return ["O", kind.__qualname__, id(value)]

    def serve(self, request):
        """Runs one request of the tests; an exception raised by the program comes back as data."""
        verb = request[0]
        capture = None
        try:
            if verb == "name":
                if request[1] not in self.module.__dict__:
                    return ["missing"]
                return ["ok", self.encode_name(self.module.__dict__[request[1]])]
            if verb == "state":
                return ["ok", self.state(self.objects[request[1]])]
            writeback = []
            target = self.objects[request[1]]
            args = [self.decode(item, writeback) for item in request[2]]
            kwargs = {key: self.decode(item, writeback) for key, item in request[3].items()}
            if request[4]:
                import io

                capture = (sys.stdout, sys.stderr, io.StringIO(), io.StringIO())
                sys.stdout, sys.stderr = capture[2], capture[3]
            if verb == "call":
                result = target(*args, **kwargs)
            elif verb == "op":
                result = self.operation(request[5], target, args)
            else:
                raise ValueError("unknown request")
            return ["ok", self.encode(result), [self.encode(item) for item in writeback], self.captured(capture)]
        except SystemExit as request_exit:
            _program_finish(_exit_status(request_exit))
        except BaseException as error:
            return ["err", self.describe_error(error), self.captured(capture)]
        finally:
            if capture is not None:
                sys.stdout, sys.stderr = capture[0], capture[1]
            _flush_streams()

    def captured(self, capture):
        if capture is None:
            return None
        return [capture[2].getvalue(), capture[3].getvalue()]

    def encode_name(self, value):
        # A module crosses by its name, and the test side imports it itself; nothing else does (a
        # function or class of another module stays the program's, called in its process).
        if isinstance(value, types_module().ModuleType):
            return ["M", value.__name__, self.remember(value)]
        return self.encode(value)

    def remember(self, value):
        self.objects[id(value)] = value
        return id(value)

    def operation(self, name, target, args):
        if name in _BUILTIN_OPERATIONS:
            return _BUILTIN_OPERATIONS[name](target, *args)
        if name == "enter":
            return type(target).__enter__(target)
        if name == "exit":
            return type(target).__exit__(target, None, None, None)
        if name == "isinstance":
            return isinstance(args[0], target)
        if name == "subclass":
            return issubclass(args[0], target)
        if name == "truth":
            return len(target) != 0 if hasattr(type(target), "__len__") else True
        if name.startswith("reflected "):
            return getattr(self.operator, name[10:])(args[0], target)
        return getattr(self.operator, name)(target, *args)

    def describe_error(self, error):
        import traceback

        kind = type(error)
        trace = _program_trace(error.__traceback__, self.path)
        frames = traceback.format_list(traceback.extract_tb(trace)) if trace is not None else []
        try:
            text = str(error)
        except BaseException:
            text = "<str() failed>"
        args = []
        for arg in getattr(error, "args", ()):
            args.append(self.encode(arg))
        found = None
        block = _values_block(self.values, error, trace, None)
        if block:
            import json

            try:
                found = json.loads(block.partition(b" ")[2])
            except ValueError:
                found = None
        return {
            "values": found or {},
            "chain": self.exception_chain(kind),
            "text": text,
            "args": args,
            "frames": frames,
        }


def types_module():
    import types

    return types


# ---- the test process ----

class _Protocol(Exception):
    pass


def _test_process(path, program, pid, read_fd, write_fd, payload=None):
    import json, linecache, traceback

    # The tests come on stdin, or from a batch's test process (src/benchmark/batch.ts), as bytes:
    # their length's line, then as many bytes of JSON, read without waiting for the pipe's end.
    if payload is None:
        length = sys.stdin.buffer.readline()
        payload = sys.stdin.buffer.read(int(length)) if length.strip().isdigit() else b""
    else:
        length, _, payload = payload.partition(b"\n")
    payload = json.loads(payload or b"{}")
    nonce = payload["nonce"].encode()
    tests = payload["tests"]
    first_line = payload["firstLine"]
    # The tests never import from a place the program can write.
    work = os.getcwd()
    sys.path[:] = [entry for entry in sys.path if entry and not os.path.abspath(entry).startswith(work)]
    sys.dont_write_bytecode = True
    text = program.decode("utf-8", "replace")
    assembled = text + ("" if text.endswith("\n") else "\n")
    assembled += "\n" * max(0, first_line - 1 - assembled.count("\n")) + tests
    linecache.cache[path] = (len(assembled), None, assembled.splitlines(True), path)

    side = _TestSide(path, pid)
    side.asked = frozenset(str(name) for name in payload.get("omit") or ())
    side.program_text = text
    channel = _Channel(read_fd, write_fd, side.serve)
    side.channel = channel
    ready = channel.receive()
    if ready is None or ready[0] != "ready":
        # The program ended before it was ready to serve: its own exit status, its own traceback.
        raise SystemExit(side.program_status())
    side.shadowing = frozenset(str(name) for name in (ready[1] if len(ready) > 1 else ()))
    values = None
    namespace = _Namespace(side)
    namespace["__name__"] = "__main__"
    namespace["__file__"] = path
    namespace["__builtins__"] = __builtins__
    # What reads the tests through sys.modules["__main__"] (unittest.main() finds its test cases
    # there) sees the tests' namespace, not this judge's module.
    import types

    class _TestsModule(types.ModuleType):
        def __getattr__(self, name):
            try:
                return namespace[name]
            except KeyError:
                raise AttributeError(name) from None

        def __dir__(self):
            return list(namespace)

    sys.modules["__main__"] = _TestsModule("__main__")
    try:
        helpers = payload.get("helpers")
        if helpers:
            # The task's own definitions the tests use (HumanEval's poly), never the program's copy.
            import _ast

            try:
                tree = compile(helpers, "<task>", "exec", _ast.PyCF_ONLY_AST, dont_inherit=True)
            except SyntaxError:
                # A prompt that ends in the signature the program completes: give it a body.
                tree = compile(helpers + "\n    pass\n", "<task>", "exec", _ast.PyCF_ONLY_AST, dont_inherit=True)
            omit = set(payload.get("omit") or ())
            tree.body = [node for node in tree.body if getattr(node, "name", None) not in omit]
            exec(compile(tree, "<task>", "exec", dont_inherit=True), namespace)
        source = "\n" * (first_line - 1) + tests
        values, tree = _with_values(source, path, assembled.encode(), first_line, True)
        code = compile(source if tree is None else tree, path, "exec", dont_inherit=True)
        exec(code, namespace)
    except SystemExit as request:
        # The tests ended the process themselves (unittest.main()): no completion, as before.
        side.end()
        raise SystemExit(_exit_status(request))
    except _ProgramEnded as ended:
        if ended.status is not None:
            _flush_streams()
            os.write(2, ("selfheal: the program process exited with status %d during %s\n" % (ended.status, ended.during)).encode())
            raise SystemExit(ended.status)
        _write_values(values, ended, ended.__traceback__, None)
        _report(ended, path)
        raise SystemExit(1)
    except BaseException as error:
        # The values and the report may still ask the program (a repr): it ends after them.
        _write_values(values, error, error.__traceback__, getattr(error, "_selfheal_values", None))
        _report(error, path)
        side.end()
        raise SystemExit(1)
    _flush_streams()
    os.write(2, b"\x1eselfheal-tests-done:" + nonce + b"\n")
    raise SystemExit(side.end())


def _report(error, path):
    import traceback

    _flush_streams()
    entries = [entry for entry in traceback.extract_tb(error.__traceback__) if entry.filename == path]
    lines = ["Traceback (most recent call last):\n"] + traceback.format_list(entries)
    lines += getattr(error, "_selfheal_frames", None) or []
    lines += traceback.format_exception_only(type(error), error)
    sys.stderr.write("".join(lines))
    _flush_streams()


class _ProgramEnded(Exception):
    def __init__(self, status, signal_name, during):
        self.status, self.during = status, during
        message = "the program process was killed by %s during %s" % (signal_name, during) if status is None else "exited"
        super().__init__(message)


_ProgramEnded.__name__ = "ProgramCrashed"
_ProgramEnded.__qualname__ = "ProgramCrashed"


class _StopIterationFromProgram(RuntimeError):
    pass


_StopIterationFromProgram.__name__ = _StopIterationFromProgram.__qualname__ = "StopIterationFromProgram"
_StopIterationFromProgram.__module__ = "builtins"


class _Namespace(dict):
    """The tests' globals: a name the tests did not define is the program's, read when it is read."""

    __slots__ = ("side",)

    def __init__(self, side):
        super().__init__()
        self.side = side

    def __missing__(self, name):
        # A builtin's name is the test process's builtin: a program's global of that name never
        # shadows it, unless the task asks the program for it (Mbpp/126's sum).
        if name in _BUILTIN_NAMES and name not in self.side.asked:
            if name in self.side.shadowing:
                raise _ShadowedBuiltin(name)
            raise KeyError(name)
        imports, rebound = self.side.import_bindings()
        imported = imports.get(name)
        if imported is not None and name not in self.side.asked:
            # What the program imported is imported here too: the program's own binding of that
            # name (np = something of its own) never answers for a module or function the tests
            # borrow from its imports, which would decide the tests' comparisons.
            if name in rebound:
                raise _ShadowedImport(name)
            try:
                return _imported(imported)
            except Exception:
                pass
        found = self.side.name(name)
        if found is _MISSING:
            raise KeyError(name)
        return found


def _import_bindings(program):
    """
    The program's top-level names that an import binds ("import numpy as np", "from math import
    isclose"), each with what it imports, and those of them that anything else binds as well.
    """
    import _ast

    try:
        tree = compile(program, "<program>", "exec", _ast.PyCF_ONLY_AST, dont_inherit=True)
    except Exception:
        return {}, frozenset()
    imports, bound = {}, set()
    pending = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, _ast.Import):
            for alias in node.names:
                name = alias.asname or alias.name.partition(".")[0]
                imports.setdefault(name, set()).add((alias.name, None, alias.asname is None))
        elif isinstance(node, _ast.ImportFrom):
            for alias in node.names:
                name = alias.asname or alias.name
                if node.level or alias.name == "*":
                    bound.add(name)
                else:
                    imports.setdefault(name, set()).add((node.module, alias.name, False))
        elif isinstance(node, (_ast.FunctionDef, _ast.AsyncFunctionDef, _ast.ClassDef)):
            bound.add(node.name)
            # A function may rebind a top-level name it declares global.
            inner = [node]
            while inner:
                found = inner.pop()
                if isinstance(found, _ast.Global):
                    bound.update(found.names)
                inner.extend(_child_nodes(found))
        else:
            if isinstance(node, _ast.Name) and not isinstance(node.ctx, _ast.Load):
                bound.add(node.id)
            elif type(node).__name__ in ("ExceptHandler", "MatchAs", "MatchStar") and getattr(node, "name", None):
                bound.add(node.name)
            elif type(node).__name__ == "MatchMapping" and node.rest:
                bound.add(node.rest)
            pending.extend(_child_nodes(node))
    # Two imports of one name that differ say nothing certain about it.
    bound.update(name for name, found in imports.items() if len(found) > 1)
    return {name: next(iter(found)) for name, found in imports.items()}, frozenset(bound & set(imports))


def _child_nodes(node):
    import _ast

    for field in node._fields:
        value = getattr(node, field, None)
        if isinstance(value, _ast.AST):
            yield value
        elif type(value) is list:
            yield from (item for item in value if isinstance(item, _ast.AST))


def _imported(binding):
    import importlib

    module, attribute, top = binding
    found = importlib.import_module(module)
    if top:
        return importlib.import_module(module.partition(".")[0])
    if attribute is None:
        return found
    try:
        return getattr(found, attribute)
    except AttributeError:
        return importlib.import_module(module + "." + attribute)


class _ShadowedImport(NameError):
    def __init__(self, name):
        super().__init__(
            "the tests use %r, which the program imports and also binds otherwise; the tests take a "
            "name the program imports from the import itself, never from the program (a program could "
            "make what its tests compare with lie), so import %r in the tests, or give the program's "
            "own %r another name" % (name, name, name)
        )


_ShadowedImport.__name__ = _ShadowedImport.__qualname__ = "ShadowedImport"
_ShadowedImport.__module__ = "builtins"


class _ShadowedBuiltin(NameError):
    def __init__(self, name):
        super().__init__(
            "the tests use %r, which is a builtin and also a name the program defines; the tests take "
            "a builtin's name from the builtins, never from the program (a program could redefine what "
            "its tests rely on), so give the program's %r another name" % (name, name)
        )


_ShadowedBuiltin.__name__ = _ShadowedBuiltin.__qualname__ = "ShadowedBuiltin"
_ShadowedBuiltin.__module__ = "builtins"
_MISSING = object()
_BUILTIN_NAMES = frozenset(dir(__import__("builtins")))


def _out_of_reach():
    """
    What an object of the tests handed to the program never leads it to: a module, a frame, code, a
    traceback or a cell (a generator's gi_frame, say, whose f_globals are the tests' names), and the
    builtins that run or reach code by a name (eval, getattr...), all of which would let the program
    run code of its own in the test process, which alone writes the verdict.
    """
    import builtins, types

    kinds = (types.ModuleType, types.FrameType, types.CodeType, types.TracebackType, types.CellType)
    names = ("eval", "exec", "compile", "__import__", "open", "getattr", "setattr", "delattr", "globals",
             "locals", "vars", "breakpoint", "input", "exit", "quit", "help", "__build_class__")
    return kinds, frozenset(id(getattr(builtins, name)) for name in names if hasattr(builtins, name))


_OUT_OF_REACH_TYPES, _OUT_OF_REACH_BUILTINS = _out_of_reach()
# The names of an object of the tests the program may read although they start with "_": plain text.
_READABLE_DUNDERS = frozenset(("__name__", "__qualname__", "__doc__", "__module__"))


def _described(value):
    kind = type(value)
    return "a %s" % kind.__name__ if kind.__module__ == "builtins" else "a %s.%s" % (kind.__module__, kind.__qualname__)


class _TestSide:
    def __init__(self, path, pid):
        import builtins, operator

        self.path, self.pid = path, pid
        # The names the task asks the program to define (the benchmark's entry point).
        self.asked = frozenset()
        # The builtins' names the program defines (it says so when ready).
        self.shadowing = frozenset()
        # The program's text, whose imports the tests' names are checked against (import_bindings).
        self.program_text = ""
        self.bindings = None
        self.callbacks = {}
        self.stand_ins = {}
        self.channel = None
        self.status = None
        self.builtins = builtins
        self.operator = operator

    def program_status(self):
        if self.status is None:
            self.status = os.waitpid(self.pid, 0)[1] if _PROGRAM_STATUS is None else _PROGRAM_STATUS(self.pid)
        status = self.status
        if os.WIFEXITED(status):
            return os.WEXITSTATUS(status)
        return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else 1

    def end(self):
        """Lets the program process end as a program does (threads joined, atexit run); its exit status."""
        if self.status is None:
            try:
                exited = os.pidfd_open(self.pid)
            except (AttributeError, OSError):
                exited = None
            try:
                # Where its exit can be watched for beside the channel, the program process stays
                # after it says it ended until this one closes the channel (the bootstrap's finish):
                # its exit then costs the run nothing.
                self.channel.send(["q", ["end", exited is not None]])
                if exited is not None and self.ended(exited):
                    # Exited 0 as a wait status says it; the program chose its status anyway.
                    self.status = 0
                    sys._selfheal_program_process = (self.pid, self.channel.write_fd)
            except (OSError, ValueError):
                pass
            finally:
                if exited is not None:
                    os.close(exited)
        return self.program_status()

    def ended(self, exited):
        """
        Whether the program process said it ended (it has run its shutdown and written its output),
        before it exits. Its exit, whichever comes first, is waited for as before: a process the
        program left holding the channel cannot keep this one waiting.
        """
        import select

        poller = select.poll()
        poller.register(self.channel.read_fd, select.POLLIN)
        poller.register(exited, select.POLLIN)
        ready = {fd for fd, _ in poller.poll()} if not self.channel.buffer else {self.channel.read_fd}
        return self.channel.read_fd in ready and self.channel.receive() == ["a", "ended"]

    def ask(self, message, during):
        _flush_streams()
        try:
            return self.channel.request(message)
        except (EOFError, OSError):
            self.program_status()
            status = self.status
            if os.WIFEXITED(status):
                raise _ProgramEnded(os.WEXITSTATUS(status), None, during) from None
            import signal

            number = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
            try:
                name = signal.Signals(number).name
            except ValueError:
                name = "signal %d" % number
            raise _ProgramEnded(None, name, during) from None

    def import_bindings(self):
        """_import_bindings of the program, read once, and only from a program that imports."""
        if self.bindings is None:
            text = self.program_text
            self.bindings = _import_bindings(text) if "import" in text else ({}, frozenset())
        return self.bindings

    def name(self, name):
        reply = self.ask(["name", name], "the lookup of %s" % name)
        if reply[0] == "missing":
            return _MISSING
        return self.decode_name(reply[1])

    def decode_name(self, data):
        if type(data) is list and data[0] == "M":
            import importlib

            try:
                return importlib.import_module(data[1])
            except Exception:
                return Remote(self, data[2], "module", data[1])
        return self.decode(data)

    # Our own decoder: fresh objects of exact builtin types, nothing the program's code can decide.
    def decode(self, data):
        kind = type(data)
        if kind in _PLAIN_SCALARS:
            return data
        if kind is not list or not data or type(data[0]) is not str:
            raise _Protocol("malformed value")
        tag = data[0]
        decode = self.decode
        if tag == "L":
            return [decode(item) for item in data[1:]]
        if tag == "T":
            return tuple(decode(item) for item in data[1:])
        if tag == "S":
            return {decode(item) for item in data[1:]}
        if tag == "F":
            return frozenset(decode(item) for item in data[1:])
        if tag == "D":
            if len(data) % 2 != 1:
                raise _Protocol("malformed dict")
            return {decode(data[index]): decode(data[index + 1]) for index in range(1, len(data), 2)}
        if tag == "B":
            return bytes.fromhex(data[1])
        if tag == "Y":
            return bytearray.fromhex(data[1])
        if tag == "C":
            return complex(float(data[1]), float(data[2]))
        if tag == "Z":
            return int(str(data[1]), 16)
        if tag == "H":
            if data[2] == "exception":
                return self.stand_in(data[3])
            return Remote(self, int(data[1]), data[2], str(data[3]))
        if tag == "M":
            return self.decode_name(data)
        if tag == "X":
            return self.rebuild(data[1], data[2])
        if tag == "N":
            import collections

            key = (str(data[1]), tuple(str(field) for field in data[2]))
            cls = self.stand_ins.get(key)
            if cls is None:
                cls = self.stand_ins[key] = collections.namedtuple(key[0], key[1])
            return cls(*[decode(item) for item in data[3]])
        if tag in ("A", "V"):
            import numpy

            dtype = numpy.dtype(str(data[1]))
            if dtype.hasobject:
                raise _Protocol("object arrays do not cross")
            raw = bytes.fromhex(data[-1])
            if tag == "V":
                return numpy.frombuffer(raw, dtype=dtype)[0]
            return numpy.frombuffer(raw, dtype=dtype).reshape([int(size) for size in data[2]]).copy()
        raise _Protocol("unknown tag %r" % tag)

    def rebuild(self, name, data):
        import collections, datetime, decimal, fractions

        if name == "Counter":
            return collections.Counter(self.decode(data))
        if name == "OrderedDict":
            return collections.OrderedDict(self.decode(data))
        if name == "defaultdict":
            return collections.defaultdict(None, self.decode(data))
        if name == "deque":
            return collections.deque(self.decode(data))
        if name == "Decimal":
            return decimal.Decimal(str(data))
        if name == "Fraction":
            return fractions.Fraction(int(data[0]), int(data[1]))
        if name == "timedelta":
            return datetime.timedelta(days=int(data[0]), seconds=int(data[1]), microseconds=int(data[2]))
        if name in ("date", "datetime", "time"):
            return getattr(datetime, name).fromisoformat(str(data))
        raise _Protocol("unknown value kind")

    def stand_in(self, chain):
        """A class of the test process's own for a program's exception class, so except and raises match it."""
        *program_classes, builtin_name = chain
        base = getattr(self.builtins, str(builtin_name), None)
        if not (isinstance(base, type) and issubclass(base, BaseException)):
            base = Exception
        cls = base
        for ident, name in reversed(program_classes):
            found = self.stand_ins.get(ident)
            if found is None:
                found = self.stand_ins[ident] = type(str(name), (cls,), {"__module__": "__main__"})
            cls = found
        return cls

    def encode(self, value, depth=0):
        kind = type(value)
        if kind is int and value.bit_length() > _BIG_INT_BITS:
            return ["Z", hex(value)]
        if kind in _PLAIN_SCALARS:
            return value
        if kind is Remote:
            return ["H", object.__getattribute__(value, "_id")]
        if depth > 64:
            raise ValueError("a value nested too deep to pass to the program")
        encode = self.encode
        if kind is list:
            return ["L"] + [encode(item, depth + 1) for item in value]
        if kind is tuple:
            return ["T"] + [encode(item, depth + 1) for item in value]
        if kind is dict:
            out = ["D"]
            for key, item in value.items():
                out.append(encode(key, depth + 1))
                out.append(encode(item, depth + 1))
            return out
        if kind is set:
            return ["S"] + [encode(item, depth + 1) for item in value]
        if kind is frozenset:
            return ["F"] + [encode(item, depth + 1) for item in value]
        flat = _encode_flat(value, kind)
        if flat is not None:
            return flat
        if kind is range:
            return ["G", "builtins", "range", [value.start, value.stop, value.step]]
        module = getattr(kind, "__module__", None)
        if module in ("collections", "decimal", "fractions", "datetime"):
            rebuilt = self.encode_library(value, kind, depth)
            if rebuilt is not None:
                return rebuilt
        if isinstance(value, _OUT_OF_REACH_TYPES) or id(value) in _OUT_OF_REACH_BUILTINS:
            raise TypeError(
                "the tests cannot hand the program %s: through it the program could run code of its own "
                "in the test process, or read and change the tests' own names" % _described(value)
            )
        ident = id(value)
        self.callbacks[ident] = value
        return ["K", ident]

    def encode_library(self, value, kind, depth):
        name = kind.__qualname__
        if name in ("Counter", "OrderedDict", "defaultdict"):
            return ["G", "collections", name if name != "defaultdict" else "OrderedDict", [self.encode(dict(value), depth + 1)]]
        if name == "deque":
            return ["G", "collections", "deque", [self.encode(list(value), depth + 1)]]
        if name in ("Decimal", "Fraction"):
            return ["G", module_of(kind), name, [str(value)]]
        return None

    def serve(self, request):
        """A callback of the tests, called by the program while the tests wait on a call."""
        try:
            target = self.callbacks[request[1]]
            if request[0] == "getattr":
                name = str(request[2])
                if name.startswith("_") and name not in _READABLE_DUNDERS:
                    # __globals__, __class__, __func__, __dict__...: the way to the tests' globals.
                    raise AttributeError("%s of an object of the tests is not the program's to read" % name)
                return ["ok", self.encode(getattr(target, name))]
            if request[0] == "op":
                operation = _TEST_OBJECT_OPERATIONS[str(request[2])]
                return ["ok", self.encode(operation(target, *[self.decode(item) for item in request[3]]))]
            if request[0] != "call":
                raise _Protocol("unexpected request")
            args = [self.decode(item) for item in request[2]]
            kwargs = {str(key): self.decode(item) for key, item in request[3].items()}
            return ["ok", self.encode(target(*args, **kwargs))]
        except _ProgramEnded:
            raise
        except BaseException as error:
            return ["err", type(error).__name__, [str(error)]]

    def call(self, ident, verb, args, kwargs, operation, during):
        capture = sys.stdout is not sys.__stdout__ or sys.stderr is not sys.__stderr__
        originals = [(index, item) for index, item in enumerate(args) if type(item) in (list, dict, set, bytearray)]
        originals += [(key, item) for key, item in kwargs.items() if type(item) in (list, dict, set, bytearray)]
        request = [verb, ident, [self.encode(item) for item in args], {str(key): self.encode(item) for key, item in kwargs.items()}, capture]
        if operation is not None:
            request.append(operation)
        reply = self.ask(request, during)
        printed = reply[-1]
        if printed:
            sys.stdout.write(printed[0])
            sys.stderr.write(printed[1])
        if reply[0] == "ok":
            # What the program did to the lists, dicts and sets it was given, done to the test's own.
            for (_, original), data in zip(originals, reply[2]):
                self.write_back(original, self.decode(data))
            return self.decode(reply[1])
        self.raise_error(reply[1], operation)

    def write_back(self, original, changed):
        if type(original) is not type(changed):
            return
        if type(original) in (list, bytearray):
            original[:] = changed
        elif type(original) is dict:
            original.clear()
            original.update(changed)
        elif type(original) is set:
            original.clear()
            original.update(changed)

    def raise_error(self, info, operation):
        cls = self.stand_in(info["chain"])
        if issubclass(cls, (StopIteration, StopAsyncIteration)):
            if operation == "next":
                raise StopIteration
            # Anywhere else a StopIteration would end whatever iteration of the tests made the call
            # (all(map(f, xs)) would be True): as inside a generator (PEP 479), it is an error.
            text = "the program raised %s from %s, which would end an iteration of the tests early" % (
                info["chain"][-1], "a call" if operation is None else operation
            )
            info = dict(info, args=[text], text=text)
            cls = _StopIterationFromProgram
        try:
            args = [self.decode(item) for item in info["args"]]
        except Exception:
            args = [info["text"]]
        try:
            error = cls(*args)
        except Exception:
            error = cls(info["text"])
        if str(error) != info["text"]:
            error = cls(info["text"])
        error._selfheal_frames = [str(line) for line in info["frames"]]
        error._selfheal_values = info["values"] if type(info["values"]) is dict else {}
        raise error

    def state(self, remote):
        data = self.ask(["state", object.__getattribute__(remote, "_id")], "a comparison")
        return self.decode_state(data[1])

    def decode_state(self, data):
        if data[0] == "P":
            return self.decode(data[1])
        fields = data[2]
        if type(fields) is list:
            fields = tuple((str(name), self.decode_state(item)) for name, item in fields)
        return _ObjectState(str(data[1]), fields)


def module_of(kind):
    return kind.__module__


class _ObjectState:
    """A program object's plain data, which alone decides whether it equals another."""

    __slots__ = ("type_name", "fields")

    def __init__(self, type_name, fields):
        self.type_name, self.fields = type_name, fields

    def __eq__(self, other):
        return type(other) is _ObjectState and other.type_name == self.type_name and other.fields == self.fields

    def __hash__(self):
        return hash((self.type_name, self.fields))

    def __repr__(self):
        if type(self.fields) is int:
            return "<%s object>" % self.type_name
        return "%s(%s)" % (self.type_name, ", ".join("%s=%r" % field for field in self.fields))


class Remote:
    """A program object the tests hold: each use is a request to the program process."""

    __slots__ = ("_side", "_id", "_kind", "_type", "__weakref__")

    def __init__(self, side, ident, kind, type_name):
        object.__setattr__(self, "_side", side)
        object.__setattr__(self, "_id", ident)
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_type", type_name)

    def _op(self, name, *args):
        side = object.__getattribute__(self, "_side")
        return side.call(object.__getattribute__(self, "_id"), "op", list(args), {}, name, "%s of a %s" % (name, object.__getattribute__(self, "_type")))

    def __call__(self, *args, **kwargs):
        side = object.__getattribute__(self, "_side")
        name = object.__getattribute__(self, "_type")
        return side.call(object.__getattribute__(self, "_id"), "call", list(args), kwargs, None, "the call of %s" % name)

    def __exit__(self, *exc):
        return self._op("exit")

    # Decided here, from the object's plain data: a program's __eq__, __bool__ or __hash__ never is.
    def __eq__(self, other):
        side = object.__getattribute__(self, "_side")
        mine = side.state(self)
        return mine == (side.state(other) if type(other) is Remote else other)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(object.__getattribute__(self, "_side").state(self))

    def __bool__(self):
        state = object.__getattribute__(self, "_side").state(self)
        if type(state) is _ObjectState:
            return bool(self._op("truth"))
        return bool(state)

    def _plain(self):
        value = self._value()
        if value is _MISSING:
            raise TypeError("a %s has no plain value to order or convert" % object.__getattribute__(self, "_type"))
        return value

    def _value(self):
        """The builtin value of a builtin type the program subclassed (an int, a list...), else _MISSING."""
        state = object.__getattribute__(self, "_side").state(self)
        return _MISSING if type(state) is _ObjectState else state

    def __contains__(self, item):
        value = self._value()
        return item in value if value is not _MISSING else self._op("contains", item)

    def __getattr__(self, name):
        # The builtin type's own methods that only read a value (startswith, issuperset, get...),
        # of a value of the program's subclass, are the value's here: they take the tests' value
        # and answer about it, which the program's override would do knowing that value.
        if name in _READING_NAMES:
            value = self._value()
            if value is not _MISSING and name in _READING_METHODS.get(type(value), ()):
                return getattr(value, name)
        return self._op("getattr", name)

    def __lt__(self, other):
        return self._plain() < (other._plain() if type(other) is Remote else other)

    def __le__(self, other):
        return self._plain() <= (other._plain() if type(other) is Remote else other)

    def __gt__(self, other):
        return self._plain() > (other._plain() if type(other) is Remote else other)

    def __ge__(self, other):
        return self._plain() >= (other._plain() if type(other) is Remote else other)

    def __int__(self):
        return int(self._plain())

    def __float__(self):
        return float(self._plain())

    def __index__(self):
        return self._plain().__index__()

    def __instancecheck__(self, instance):
        return self._op("isinstance", instance) is True

    def __subclasscheck__(self, cls):
        return self._op("subclass", cls) is True


def _binary(name):
    # A value of the program's own subclass of a builtin type (an int, a set...) is that value here:
    # its operators and membership are the test process's, so abs(result - expected) or
    # expected - result never asks the program's __sub__, which would see the expected value and
    # answer to it. Any other object's operators are its class's own, and the program's.
    import operator

    compute = getattr(operator, name)

    def forward(self, other):
        value = self._value()
        if value is not _MISSING:
            return compute(value, other)
        return self._op(name, other)

    def reflected(self, other):
        value = self._value()
        if value is not _MISSING:
            return compute(other, value)
        return self._op("reflected " + name, other)

    return forward, reflected


def _unary(name):
    import operator

    compute = getattr(operator, name)

    def apply(self):
        value = self._value()
        return compute(value) if value is not _MISSING else self._op(name)

    return apply


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and_", "or_", "xor", "lshift", "rshift"):
    _dunder = _name.rstrip("_")
    _forward, _reflected = _binary(_name)
    setattr(Remote, "__%s__" % _dunder, _forward)
    setattr(Remote, "__r%s__" % _dunder, _reflected)
# Uses the program answers as they come: attributes, text, containers, iteration, unary operators.
def _reading_methods():
    """Per builtin type, its public names that read a value and change nothing."""
    unchanging = (str, bytes, tuple, frozenset, int, float, complex, bool)
    methods = {kind: frozenset(name for name in dir(kind) if not name.startswith("_")) for kind in unchanging}
    methods[bytearray] = frozenset(name for name in methods[bytes] if hasattr(bytearray, name))
    methods[list] = frozenset(("count", "index", "copy"))
    methods[set] = frozenset(
        ("issubset", "issuperset", "isdisjoint", "union", "intersection", "difference", "symmetric_difference", "copy")
    )
    methods[dict] = frozenset(("get", "keys", "values", "items", "copy"))
    return methods, frozenset().union(*methods.values())


_READING_METHODS, _READING_NAMES = _reading_methods()
for _name in (
    "setattr", "delattr", "repr", "str", "format", "dir", "enter", "len", "iter", "next",
    "reversed", "getitem", "setitem", "delitem",
):
    setattr(Remote, "__%s__" % _name, (lambda name: lambda self, *args: self._op(name, *args))(_name))
for _name in ("neg", "pos", "abs", "invert"):
    setattr(Remote, "__%s__" % _name, _unary(_name))
del _name, _dunder, _forward, _reflected

${PYTHON_VALUES_PARTS}
`);
