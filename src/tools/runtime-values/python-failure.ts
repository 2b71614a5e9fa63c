/**
 * The harness's values line (see python-harness.ts), Python source that the harness compiles
 * only when an exception reaches its hook: `Values` makes bounded, masked reprs, and
 * `values_block(state, error, trace)` gathers the failed check's operands, the innermost frames'
 * locals and the tests' calls into the one line written on fd 2 before the traceback.
 */
export const PYTHON_FAILURE_PART = String.raw`class Values:
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


def values_block(state, error, trace, remote=None):
    """
    The values line for an exception. With remote (the judge's test process, for an exception the
    program process raised during a call): that side's block, whose check and frames are innermost.
    """
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
    if remote is not None:
        if remote.get("assertion"):
            block["assertion"] = remote["assertion"]
    elif isinstance(error, AssertionError) and failing is not None:
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

    frames = list((remote or {}).get("frames") or [])[: limits["frames"]]
    for depth, entry in enumerate(reversed(entries), len(frames)):
        if len(frames) >= limits["frames"]:
            break
        frame = entry.tb_frame
        code = frame.f_code
        # A module's globals are the point only where the module itself failed.
        if code.co_name == "<module>" and depth > 0:
            continue
        found = frame.f_locals
        names = [
            name
            for name, value in found.items()
            if not (name.startswith(("__", ".")) or name == "@selfheal" or callable(value) or type(value).__name__ == "module")
        ]
        shown = [[name, values.show(found[name], name)] for name in names[: limits["locals"]]]
        if len(names) > limits["locals"]:
            shown.append(["...", "%d more" % (len(names) - limits["locals"])])
        if shown:
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
    cut = values.cut + ((remote or {}).get("cut") or 0)
    if cut:
        block["cut"] = cut
    text = json.dumps(block, ensure_ascii=True)
    return b"\x1eselfheal-values:" + config["nonce"].encode() + b" " + text.encode() + b"\n"
`;
