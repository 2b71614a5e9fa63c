import { PYTHON_FAILURE_PART } from "./python-failure.js";
import { PYTHON_REWRITE_PART } from "./python-rewrite.js";

/**
 * What both Python harnesses (this one, and the judge's test and program processes) share: the taps
 * the rewritten asserts and test calls call, and the two parts compiled only when a run needs them.
 */
export const PYTHON_VALUES_PARTS = String.raw`_NOT_RETURNED = object()


class _Taps:
    """What the rewritten asserts and test calls call; each hands back what it was given."""

    __slots__ = ("_state",)

    def __init__(self, state):
        self._state = state

    def begin(self, check):
        records = self._state["asserts"]
        records.pop(check, None)
        # Where this evaluation starts among the recorded calls: the ones it makes come after.
        records[check] = {"from": len(self._state["calls"]) + self._state["dropped"]}

    def value(self, check, index, value):
        record = self._state["asserts"].get(check)
        if record is not None:
            record[index] = value
        return value

    def args(self, site, line, function, *args):
        state = self._state
        try:
            code = function.__code__
            ours = code.co_filename == state["path"] and code.co_firstlineno < state["config"]["testsFrom"]
        except Exception:
            ours = False
        if not ours:
            state["open"].pop(site, None)
            return args
        calls = state["calls"]
        entry = [line, id(sys._getframe(1)), code.co_name, args, {}, _NOT_RETURNED, len(calls) + state["dropped"]]
        calls.append(entry)
        if len(calls) > 32:
            del calls[0]
            state["dropped"] += 1
        state["open"][site] = entry
        return args

    def kwargs(self, site, **kwargs):
        entry = self._state["open"].get(site)
        if entry is not None:
            entry[4] = kwargs
        return kwargs

    def returned(self, site, value):
        entry = self._state["open"].pop(site, None)
        if entry is not None:
            entry[5] = value
        return value


def _part(source, filename):
    """Compiles a part of the harness when a run needs it: most runs pass and need neither."""
    namespace = {"__name__": "selfheal_harness", "_NOT_RETURNED": _NOT_RETURNED}
    exec(compile(source, filename, "exec"), namespace)
    return namespace


# Rewrites asserts and test calls; compiled only for a program that has either.
_REWRITE = r'''
${PYTHON_REWRITE_PART}'''

# Builds the values line; compiled only when an exception reaches the hook.
_FAILURE = r'''
${PYTHON_FAILURE_PART}'''
`;

/**
 * The Python half of runtime values: written into the work dir as `.selfheal-harness.py` and run by
 * the one line main.py holds (see instrument.ts), on every backend. It reads the assembled program
 * from its own end, after a separator line, writes it back over main.py (so the program, its tracebacks and its
 * own `__file__` see the program and nothing else) and removes itself, then compiles the
 * program under main.py's path with the line numbers it has: asserts keep their statement with a
 * tap around each operand, and calls of a plain name in the tests record their arguments and
 * result, in the test's own frame. On an uncaught exception its `sys.excepthook` writes one line
 * on fd 2, `<RS>selfheal-values:<nonce> {json}`, before the traceback, which it prints without the
 * loader's and the harness's frames. The values are cut (depth, items, characters) and masked
 * (secret names, secret shapes, the sandbox's environment) before they leave the run. `CONFIG`, a
 * Python literal, is prepended per run. Its two parts compiled only when a run needs them are
 * python-rewrite.ts (asserts and test calls) and python-failure.ts (the values line).
 */
export const PYTHON_VALUES_HARNESS = String.raw`import sys


def _selfheal_start(config):
    import os

    main = sys.modules["__main__"]
    path = main.__file__
    here = sys._getframe().f_code.co_filename
    # The program follows the harness in this same file, after the separator (spelled in two parts
    # here, so that its first occurrence is the real one): one file less to write per run.
    with open(here, "rb") as handle:
        raw = handle.read().partition(b"\n#selfheal" + b"-program#\n")[2]
    # main.py becomes the program itself, as without the harness: tracebacks printed by anyone read
    # their source lines from it, and a program that reads its own file finds itself.
    try:
        with open(path, "wb") as handle:
            handle.write(raw)
        os.unlink(here)
    except OSError:
        # A work dir the program may not write: tracebacks read the program from linecache instead.
        import linecache

        text = raw.decode("utf-8", "replace")
        linecache.cache[path] = (len(text), None, text.splitlines(True), path)
    state = {"asserts": {}, "checks": {}, "calls": [], "dropped": 0, "open": {}, "config": config, "path": path}
    state.update(code=None, raw=raw)
    previous_hook = sys.excepthook

    def report_failure(kind, error, trace):
        trace = _program_part(trace, state, here)
        if isinstance(error, SyntaxError) and state["code"] is None:
            trace = None
        if isinstance(error, BaseException):
            error.__traceback__ = trace
        try:
            block = _part(_FAILURE, here)["values_block"](state, error, trace)
        except Exception:
            block = None
        try:
            sys.stderr.flush()
        except Exception:
            pass
        if block:
            try:
                os.write(2, block)
            except OSError:
                pass
        if previous_hook is sys.__excepthook__:
            import traceback

            traceback.print_exception(kind, error, trace)
        else:
            previous_hook(kind, error, trace)

    sys.excepthook = report_failure
    program = raw
    if config["asserts"] or config["calls"]:
        import _ast

        tree = compile(raw, path, "exec", _ast.PyCF_ONLY_AST, dont_inherit=True)
        program = _part(_REWRITE, here)["rewrite"](tree, config, state["checks"])
    state["code"] = compile(program, path, "exec", dont_inherit=True)
    # Found by name lookup through builtins, so the program's globals() hold nothing of ours.
    import builtins

    builtins.__dict__["@selfheal"] = _Taps(state)
    return state["code"]


${PYTHON_VALUES_PARTS}

def _program_part(trace, state, here):
    """The traceback from the program's first frame on, without the loader's and the harness's frames."""
    path, code = state["path"], state["code"]
    while trace is not None and trace.tb_frame.f_code is not code and trace.tb_frame.f_code.co_filename in (path, here):
        trace = trace.tb_next
    return trace


exec(_selfheal_start(CONFIG), sys.modules["__main__"].__dict__)
`;
