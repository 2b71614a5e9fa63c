/**
 * Runs in the sandbox: splits the written tests into statements, and drops each one that does not
 * parse or that contradicts the task's own tests: `assert f(x) == a` written where the task says
 * `assert f(x) == b`. The task's tests are the authority; the written ones only add cases.
 */
export const ANALYZER_SOURCE = String.raw`
import ast, json

def parse(source):
    try:
        return ast.parse(source)
    except SyntaxError:
        return None

def expectation(statement):
    """For 'assert CALL == EXPECTED' (either side), the call's shape and the expected value."""
    if not isinstance(statement, ast.Assert) or not isinstance(statement.test, ast.Compare):
        return None
    compare = statement.test
    if len(compare.ops) != 1 or not isinstance(compare.ops[0], ast.Eq):
        return None
    left, right = compare.left, compare.comparators[0]
    if isinstance(right, ast.Call) and not isinstance(left, ast.Call):
        left, right = right, left
    if not isinstance(left, ast.Call):
        return None
    return ast.dump(left), ast.dump(right)

task_tree = parse(open("task_tests.py").read()) or ast.Module(body=[], type_ignores=[])
authority = {}
for statement in task_tree.body:
    found = expectation(statement)
    if found:
        authority[found[0]] = found[1]

written_source = open("written_tests.py").read()
written_tree = parse(written_source)
kept, dropped = [], []
if written_tree is None:
    # One bad line must not cost the rest: fall back to line by line.
    candidates = [(line, parse(line)) for line in written_source.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    units = [(line, tree.body[0] if tree and tree.body else None) for line, tree in candidates]
else:
    units = [(ast.get_source_segment(written_source, statement), statement) for statement in written_tree.body]

for source, statement in units:
    if statement is None:
        dropped.append({"test": source, "reason": "does not parse"})
        continue
    found = expectation(statement)
    if found and found[0] in authority and authority[found[0]] != found[1]:
        dropped.append({"test": source, "reason": "contradicts the task's own tests"})
        continue
    kept.append(source)

print(json.dumps({"kept": kept, "dropped": dropped}))
`;
