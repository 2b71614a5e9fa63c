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
 * Python literal, is prepended per run.
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


_NOT_RETURNED = object()


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
def rewrite(tree, config, checks):
    """
    An assert keeps its statement and its evaluation (each operand once, in the same order), with a
    tap around each operand that remembers the value. A call of a plain name in the tests records
    its arguments and result; the call itself still happens in the test's own frame. Only statement
    lists are walked to find asserts, and only the tests' statements for calls: a big program costs
    little more than its parse. The C module _ast serves: ast.py alone takes longer to import than
    the rest of this takes to run.
    """
    import _ast as ast

    def at(node, where):
        node.lineno, node.col_offset = where.lineno, where.col_offset
        node.end_lineno, node.end_col_offset = where.end_lineno, where.end_col_offset
        return node

    def constant(value, where):
        return at(ast.Constant(value), where)

    def taps(method, args, where):
        taps = at(ast.Name("@selfheal", ast.Load()), where)
        return at(ast.Call(at(ast.Attribute(taps, method, ast.Load()), where), args, []), where)

    def role(expression):
        return "call" if isinstance(expression, ast.Call) else "operand"

    def assertion(node):
        check = len(checks)
        parts = []

        def where(node):
            return [node.lineno, node.col_offset, node.end_lineno, node.end_col_offset]

        # Positions, not text: the text is read from the source only if this assert fails.
        def tap(expression, kind, of=None):
            parts.append({"at": where(expression), "role": kind, "of": of and where(of)})
            index = len(parts) - 1
            return taps("value", [constant(check, expression), constant(index, expression), expression], expression)

        def tap_arguments(call):
            if isinstance(call, ast.Call):
                call.args = [
                    arg if isinstance(arg, (ast.Constant, ast.Starred)) else tap(arg, "argument", call.func)
                    for arg in call.args
                ]

        test = node.test
        shape = {"kind": "value"}
        if isinstance(test, ast.Compare):
            shape = {"kind": "compare", "ops": [type(op).__name__ for op in test.ops]}
            operands = [test.left, *test.comparators]
            tapped = [tap(operand, role(operand)) for operand in operands]
            for operand in operands:
                tap_arguments(operand)
            test.left, test.comparators = tapped[0], tapped[1:]
        elif isinstance(test, ast.BoolOp):
            shape = {"kind": type(test.op).__name__.lower()}
            test.values = [tap(value, role(value)) for value in test.values]
        elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            shape = {"kind": "not"}
            operand = test.operand
            test.operand = tap(operand, role(operand))
            tap_arguments(operand)
        else:
            node.test = tap(test, role(test))
            tap_arguments(test)
        begin = taps("begin", [constant(check, node)], node.test)
        node.test = at(ast.BoolOp(ast.Or(), [begin, node.test]), node)
        checks[check] = dict(shape, line=node.lineno, parts=parts)

    sites = [0]

    def calls_in(node):
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                value[:] = [calls_in(item) if isinstance(item, ast.AST) else item for item in value]
            elif isinstance(value, ast.AST):
                setattr(node, name, calls_in(value))
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and config["testsFrom"] <= node.lineno <= config["testsTo"]
            and not (node.keywords and any(isinstance(arg, ast.Starred) for arg in node.args))
        ):
            return node
        sites[0] += 1
        site = constant(sites[0], node)
        function = at(ast.Name(node.func.id, ast.Load()), node)
        args = taps("args", [site, constant(node.lineno, node), function, *node.args], node)
        keywords = []
        if node.keywords:
            kwargs = taps("kwargs", [site], node)
            kwargs.keywords = node.keywords
            keywords = [at(ast.keyword(None, kwargs), node)]
        starred = at(ast.Starred(args, ast.Load()), node)
        call = at(ast.Call(node.func, [starred], keywords), node)
        return taps("returned", [site, call], node)

    def statements(body):
        for node in body:
            if isinstance(node, ast.Assert):
                assertion(node)
                continue
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                inner = getattr(node, field, None)
                if isinstance(inner, list):
                    statements(inner)

    if config["asserts"]:
        statements(tree.body)
    if config["calls"]:
        tree.body = [
            calls_in(node) if node.end_lineno >= config["testsFrom"] and node.lineno <= config["testsTo"] else node
            for node in tree.body
        ]
    return tree
'''

# Builds the values line; compiled only when an exception reaches the hook.
_FAILURE = r'''
class Values:
    """Bounded, masked reprs: depth, items and characters capped, and what was cut counted."""

    def __init__(self, config):
        import os
        import re
        import reprlib

        limits = config["limits"]
        self.patterns = [re.compile(pattern) for pattern in config["secrets"]]
        self.secret_names = re.compile(config["secretNames"], re.IGNORECASE)
        self.environment = sorted(
            {value for value in os.environ.values() if len(value) >= 8}, key=len, reverse=True
        )
        self.address = re.compile(r" at 0x[0-9a-fA-F]+>")
        self.cut = 0
        outer = self

        class Short(reprlib.Repr):
            def repr_str(self, value, level):
                if len(value) <= limits["chars"]:
                    return repr(value)
                outer.cut += len(value) - limits["chars"]
                return repr(value[: limits["chars"]]) + "[... %s characters cut ...]" % format(
                    len(value) - limits["chars"], ","
                )

            def repr_instance(self, value, level):
                if type(value).__name__ == "_Environ":
                    return "<environment: not shown>"
                text = repr(value)
                if len(text) <= limits["chars"]:
                    return text
                outer.cut += len(text) - limits["chars"]
                return text[: limits["chars"]] + "[... %s characters cut ...]" % format(len(text) - limits["chars"], ",")

            def _repr_iterable(self, value, level, left, right, maxiter, trail="", *rest):
                count = len(value)
                if level <= 0 and count:
                    return left + "..." + right
                import itertools

                pieces = [self.repr1(item, level - 1) for item in itertools.islice(value, maxiter)]
                if count > maxiter:
                    pieces.append("... %s more" % format(count - maxiter, ","))
                if count == 1 and trail:
                    right = trail + right
                return left + ", ".join(pieces) + right

            def repr_dict(self, value, level):
                count = len(value)
                if count == 0:
                    return "{}"
                if level <= 0:
                    return "{...}"
                import itertools

                pieces = [
                    "%s: %s" % (self.repr1(key, level - 1), outer.named(key, value[key], level - 1))
                    for key in itertools.islice(value, self.maxdict)
                ]
                if count > self.maxdict:
                    pieces.append("... %s more" % format(count - self.maxdict, ","))
                return "{" + ", ".join(pieces) + "}"

        self.short = Short()
        self.short.maxlevel = limits["depth"]
        for name in ("maxtuple", "maxlist", "maxarray", "maxdict", "maxset", "maxfrozenset", "maxdeque"):
            setattr(self.short, name, limits["items"])
        self.short.maxstring = limits["chars"]
        self.short.maxother = limits["chars"]
        self.short.maxlong = limits["chars"]

    def named(self, key, value, level):
        if isinstance(key, str) and self.secret_names.search(key):
            return "<masked: secret name>"
        return self.short.repr1(value, level)

    def show(self, value, name=None):
        if name is not None and self.secret_names.search(name):
            return "<masked: secret name>"
        try:
            text = self.short.repr(value)
        except Exception as error:
            text = "<repr failed: %s>" % type(error).__name__
        return self.mask(text)

    def mask(self, text):
        text = self.address.sub(">", text)
        for pattern in self.patterns:
            text = pattern.sub("<masked>", text)
        for value in self.environment:
            if value in text:
                text = text.replace(value, "<masked: environment>")
        return text


def _segment(raw, at):
    """The source text between two AST positions (lines from 1, columns in UTF-8 bytes), on one line."""
    first, start, last, end = at
    lines = raw.split(b"\n")[first - 1 : last]
    if len(lines) == 1:
        text = lines[0][start:end]
    else:
        text = b" ".join([lines[0][start:]] + [line.strip() for line in lines[1:-1]] + [lines[-1][:end].strip()])
    return text.decode("utf-8", "replace").strip()


def values_block(state, error, trace):
    import json

    config = state["config"]
    limits = config["limits"]
    path = state["path"]
    values = Values(config)
    entries = []
    while trace is not None:
        if trace.tb_frame.f_code.co_filename == path:
            entries.append(trace)
        trace = trace.tb_next
    block = {}

    failing = entries[-1] if entries else None
    # The failing check's own calls: those its assert made, else those still running when it raised.
    made = lambda call: call[5] is _NOT_RETURNED  # noqa: E731
    if isinstance(error, AssertionError) and failing is not None:
        line = failing.tb_lineno
        checks = [check for check in state["asserts"] if state["checks"].get(check, {}).get("line") == line]
        if checks:
            check = checks[-1]
            shape = state["checks"][check]
            record = state["asserts"][check]
            parts = []
            for index, part in enumerate(shape["parts"]):
                role = part["role"] if part["of"] is None else "argument of " + _segment(state["raw"], part["of"])
                shown = {"expr": _segment(state["raw"], part["at"]), "role": role}
                if index in record:
                    shown["value"] = values.show(record[index])
                parts.append(shown)
            block["assertion"] = dict(shape, parts=parts)
            made = lambda call: call[6] >= record["from"]  # noqa: E731

    frames = []
    for entry in reversed(entries[-limits["frames"] :]):
        frame = entry.tb_frame
        code = frame.f_code
        module_level = code.co_name == "<module>"
        shown = []
        for name, value in list(frame.f_locals.items()):
            if name.startswith(("__", ".")) or name == "@selfheal":
                continue
            if module_level and (callable(value) or type(value).__name__ == "module"):
                continue
            if len(shown) >= limits["locals"]:
                shown.append(["...", "%d more" % (len(frame.f_locals) - len(shown))])
                break
            shown.append([name, values.show(value, name)])
        frames.append({"function": code.co_name, "line": entry.tb_lineno, "locals": shown})
    if frames:
        block["frames"] = frames

    in_tests = {(id(entry.tb_frame), entry.tb_lineno) for entry in entries if entry.tb_lineno >= config["testsFrom"]}
    calls = [call for call in state["calls"] if (call[1], call[0]) in in_tests and made(call)][-limits["calls"] :]
    if calls:
        block["calls"] = [
            {
                "function": function,
                "line": line,
                "args": ", ".join(
                    [values.show(arg) for arg in args] + ["%s=%s" % (key, values.show(arg, key)) for key, arg in kwargs.items()]
                ),
                **({} if result is _NOT_RETURNED else {"returned": values.show(result)}),
            }
            for line, _, function, args, kwargs, result, _ in calls
        ]
    if not block:
        return None
    if values.cut:
        block["cut"] = values.cut
    text = json.dumps(block, ensure_ascii=True)
    return b"\x1eselfheal-values:" + config["nonce"].encode() + b" " + text.encode() + b"\n"
'''


def _program_part(trace, state, here):
    """The traceback from the program's first frame on, without the loader's and the harness's frames."""
    path, code = state["path"], state["code"]
    while trace is not None and trace.tb_frame.f_code is not code and trace.tb_frame.f_code.co_filename in (path, here):
        trace = trace.tb_next
    return trace


exec(_selfheal_start(CONFIG), sys.modules["__main__"].__dict__)
`;
