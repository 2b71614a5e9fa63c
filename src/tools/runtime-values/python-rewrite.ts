/**
 * The harness's assert and call rewrite (see python-harness.ts), Python source that the harness
 * compiles only for a program whose tests have an assert or a call to record: `rewrite(tree,
 * config, checks)` turns each assert into the same statement with a tap around each operand, and
 * each call of a plain name in the tests into one that records its arguments and result.
 */
export const PYTHON_REWRITE_PART = String.raw`def rewrite(tree, config, checks):
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
`;
