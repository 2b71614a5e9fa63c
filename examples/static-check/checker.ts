/**
 * The checker runs inside the sandbox, like the program: parsing untrusted code is cheap to
 * isolate and keeps a pathological input from touching the host. It prints one JSON list.
 */
export const CHECKER_SOURCE = String.raw`
import ast, json, sys

config = json.loads(open("policy.json").read())
allowed = set(config["allowedImports"])
banned = set(config["bannedCalls"])
findings = []

try:
    tree = ast.parse(open("candidate.py").read(), "main.py")
except SyntaxError as error:
    findings.append({"type": "SyntaxError", "line": error.lineno, "message": f"{error.msg}"})
    tree = None

for node in ast.walk(tree) if tree else []:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        for name in names:
            if name.split(".")[0] not in allowed:
                findings.append({"type": "DisallowedImport", "line": node.lineno,
                                 "message": f"import of '{name}' is not allowed (allowed: {', '.join(sorted(allowed))})"})
    elif isinstance(node, ast.Call):
        callee = node.func
        name = callee.id if isinstance(callee, ast.Name) else callee.attr if isinstance(callee, ast.Attribute) else None
        if name in banned:
            findings.append({"type": "DisallowedCall", "line": node.lineno, "message": f"call to '{name}()' is not allowed"})

print(json.dumps(findings))
`;
