import { createHash } from "node:crypto";
import type { Execution } from "../core/state.js";
import type { Language } from "../sandbox/types.js";
import { normalizeErrorMessage } from "./fingerprint.js";

/**
 * What a candidate does, as a digest candidates can be grouped by (see chooseCandidate). With
 * Python tests, the value each assertion checks, recorded instead of asserted: two programs that
 * compute the same values on the tests' calls behave alike even where both fail. Otherwise, what
 * the run printed and how it ended.
 */
export interface Behaviour {
  digest: string;
  /** The behaviour in a few words: the first values, the output's first line, the exception. */
  shows: string;
}

const SHOWS_CHARS = 160;
const VALUE_CHARS = 200;
const BEHAVIOUR_MARK = "\x1eselfheal-behaviour:";

const digestOf = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 12);
const cut = (text: string, chars: number) => (text.length > chars ? `${text.slice(0, chars - 1)}…` : text);

/** How a run ended, without its paths and line numbers: two programs raising the same error agree. */
function ending(run: Execution): string {
  if (run.status === "ok") return "";
  if (run.status === "timeout") return "times out";
  return `raises ${run.error?.type ?? "an error"}${run.error?.message ? `: ${normalizeErrorMessage(run.error.message)}` : ""}`;
}

/** Without tests (or with tests the probe cannot read): the output and the ending, of the run itself. */
export function behaviourOfRun(run: Execution): Behaviour {
  const printed = run.stdout.trim();
  const end = ending(run);
  const firstLine = printed.split("\n")[0] ?? "";
  const shows = printed
    ? `prints ${JSON.stringify(cut(firstLine, 80))}${end ? `, then ${end}` : ""}`
    : end || "prints nothing";
  return { digest: digestOf(`${printed}\n${end}`), shows: cut(shows, SHOWS_CHARS) };
}

/**
 * A Python program that runs the candidate, then the tests with every `assert` rewritten to record
 * the value it checks (the left side of a comparison, else the whole condition) and go on, so a
 * wrong value does not hide the calls after it. Tests that wrap their asserts in a function
 * (`def check(candidate): ...`) are rewritten the same way, since the rewrite walks the whole tree.
 * The `proposed` calls (model-written expressions) are recorded after them; one that does not
 * parse is skipped for every candidate alike.
 */
export function pythonBehaviourProbe(code: string, tests: string, proposed: readonly string[] = []): string {
  const payload = Buffer.from(tests, "utf8").toString("base64");
  const extra = Buffer.from(JSON.stringify(proposed), "utf8").toString("base64");
  const program = code.endsWith("\n") ? code : `${code}\n`;
  return `${program}
import ast as _sh_ast, base64 as _sh_b64, json as _sh_json, os as _sh_os
_sh_values = []
def _sh_record(thunk):
    try:
        _sh_values.append(repr(thunk())[:${VALUE_CHARS}])
    except Exception as error:
        _sh_values.append("raises " + type(error).__name__)
    return True
class _ShRecorder(_sh_ast.NodeTransformer):
    def visit_Assert(self, node):
        checked = node.test.left if isinstance(node.test, _sh_ast.Compare) and len(node.test.ops) == 1 else node.test
        thunk = _sh_ast.Lambda(args=_sh_ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]), body=checked)
        call = _sh_ast.Call(func=_sh_ast.Name(id="_sh_record", ctx=_sh_ast.Load()), args=[thunk], keywords=[])
        return _sh_ast.copy_location(_sh_ast.Expr(value=call), node)
_sh_tree = _ShRecorder().visit(_sh_ast.parse(_sh_b64.b64decode("${payload}").decode("utf-8")))
try:
    exec(compile(_sh_ast.fix_missing_locations(_sh_tree), "tests", "exec"), globals())
except Exception as error:
    _sh_values.append("tests raise " + type(error).__name__)
for _sh_expression in _sh_json.loads(_sh_b64.b64decode("${extra}").decode("utf-8")):
    try:
        _sh_compiled = compile(_sh_expression, "proposed", "eval")
    except SyntaxError:
        continue
    _sh_record(lambda: eval(_sh_compiled, globals()))
_sh_os.write(2, ("\\n${BEHAVIOUR_MARK.replace("\x1e", "\\x1e")}" + _sh_json.dumps(_sh_values) + "\\n").encode("utf-8"))
`;
}

/** The recorded values, from the probe's stderr; null when the probe did not get to the end. */
export function readProbe(stderr: string): string[] | null {
  const at = stderr.lastIndexOf(BEHAVIOUR_MARK);
  if (at < 0) return null;
  const line = stderr.slice(at + BEHAVIOUR_MARK.length).split("\n")[0] ?? "";
  try {
    const values: unknown = JSON.parse(line);
    return Array.isArray(values) && values.every((value) => typeof value === "string") ? values : null;
  } catch {
    return null;
  }
}

/** The behaviour read from a finished probe: the values, or how the program ended before them. */
export function behaviourOfProbe(probe: Execution): Behaviour {
  const values = readProbe(probe.stderr);
  if (values === null) {
    const end = ending(probe) || "ends before the tests' calls";
    return { digest: digestOf(`probe\n${end}`), shows: cut(end, SHOWS_CHARS) };
  }
  const shows = values.length === 0 ? "no assertion was reached" : `checks get ${values.join(", ")}`;
  return { digest: digestOf(values.join("\n")), shows: cut(shows, SHOWS_CHARS) };
}

/** Whether the tests can be probed call by call: Python only, for now. */
export function canProbe(language: Language, tests: string | undefined): tests is string {
  return language === "python" && Boolean(tests?.trim());
}
