import { z } from "zod";
import type { BenchmarkTask } from "./dataset.js";

/**
 * The behaviour probe: one Python program per task that runs the hidden tests' `check` against
 * a recorder instead of the solution. Every call the tests make goes to the reference solution
 * (whose answer is returned, so `check` runs to the end) and to each mutant still undecided, and
 * the first difference is recorded. The tests' assertions play no part in the verdict, which is
 * what lets the dataset verify catch a judge that accepts a wrong program.
 */

const PROBE_MARKER = "__SELFHEAL_PROBE__";

const ProbeVerdictSchema = z.object({
  id: z.string(),
  /** Compiled (with the prompt's imports and helpers). */
  valid: z.boolean(),
  /** How it first differed from the reference, or null if it never did. */
  difference: z.enum(["value", "exception", "timeout"]).nullable(),
  detail: z.string(),
  /**
   * False when the probe stopped running it before the last call: the candidates before it already
   * held the mutants `selectMutants` keeps, whatever it would have done.
   */
  needed: z.boolean(),
});
export type ProbeVerdict = z.infer<typeof ProbeVerdictSchema>;

const ProbeOutputSchema = z.object({
  verdicts: z.array(ProbeVerdictSchema),
  calls: z.number(),
  checkError: z.string().nullable(),
});

/**
 * Tasks whose specification admits more than one right answer, so "differs from the reference"
 * would call a correct program wrong. Each entry is the task's own acceptance rule, as a Python
 * expression over `args` (the call's arguments) and `got` (the mutant's answer), evaluated with
 * the task's globals. Keyed by id and entry point, so a user dataset reusing an id is unaffected.
 */
export const ANSWER_EQUIVALENCE: Record<string, { entryPoint: string; reason: string; accepts: string }> = {
  "HumanEval/32": {
    entryPoint: "find_zero",
    reason: "the docstring asks for any one zero of the polynomial",
    accepts: "isinstance(got, (int, float)) and abs(poly(args[0], got)) < 1e-4",
  },
};

/**
 * Comparisons a test suite declares for every call, recognised by the text of its assertion
 * helper: there the tests' own rule, not equality with the reference, says what a right answer
 * is. MBPP+ compares the answers of 7 tasks as sets ("the shared elements", Mbpp/2).
 */
export const DECLARED_EQUIVALENCE: ReadonlyArray<{ marker: string; reason: string; accepts: string }> = [
  {
    marker: "    out = set(out)\n    exp = set(exp)\n",
    reason: "the tests compare the answers as sets",
    accepts: "set(got) == set(expected)",
  },
];

/** The task's own rule for a second right answer, as a Python expression over args, got and expected; null when there is none. */
export function acceptanceRule(task: BenchmarkTask): string | null {
  const equivalence = ANSWER_EQUIVALENCE[task.task_id];
  if (equivalence !== undefined && equivalence.entryPoint === task.entry_point) return equivalence.accepts;
  return DECLARED_EQUIVALENCE.find((declared) => task.test.includes(declared.marker))?.accepts ?? null;
}

const PROBE_PRELUDE = String.raw`
import base64 as _selfheal_base64, contextlib as _selfheal_contextlib, copy as _selfheal_copy
import io as _selfheal_io, json as _selfheal_json, math as _selfheal_math, signal as _selfheal_signal
import sys as _selfheal_sys, time as _selfheal_time

_selfheal_payload = _selfheal_json.loads(_selfheal_base64.b64decode("__PAYLOAD__").decode("utf-8"))


class _SelfhealProbeTimeout(BaseException):
    """BaseException so a mutant's own "except Exception" cannot swallow it."""


def _selfheal_on_alarm(signum, frame):
    raise _SelfhealProbeTimeout()


try:
    _selfheal_signal.signal(_selfheal_signal.SIGALRM, _selfheal_on_alarm)
    _selfheal_can_time = True
except (ValueError, AttributeError, OSError):
    # Not the main thread, or no SIGALRM: a hanging mutant then ends the whole probe, and the
    # caller retries candidates one by one.
    _selfheal_can_time = False


def _selfheal_short(value, limit=120):
    try:
        text = repr(value)
    except Exception:
        text = "<unrepresentable>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _selfheal_same(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and (isinstance(a, float) or isinstance(b, float)):
        if _selfheal_math.isnan(a) and _selfheal_math.isnan(b):
            return True
        # Hidden tests compare floats with tolerances around 1e-6; a closer result is not a bug.
        return _selfheal_math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) == type(b) and len(a) == len(b) and all(_selfheal_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_selfheal_same(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:
        return False


def _selfheal_accepts(args, got, expected):
    """The task's own rule for a second right answer, when it has one."""
    rule = _selfheal_payload["accepts"]
    if rule is None:
        return False
    try:
        return bool(eval(rule, globals(), {"args": args, "got": got, "expected": expected}))
    except Exception:
        return False


_selfheal_mutants = []
for _selfheal_spec in _selfheal_payload["mutants"]:
    _selfheal_entry = {"id": _selfheal_spec["id"], "operator": _selfheal_spec["operator"], "valid": True,
                       "difference": None, "detail": "", "fn": None, "needed": True}
    try:
        _selfheal_ns = {"__name__": "__selfheal_mutant__"}
        exec(compile(_selfheal_payload["prompt"] + _selfheal_spec["solution"], "<mutant>", "exec"), _selfheal_ns)
        _selfheal_entry["fn"] = _selfheal_ns[_selfheal_payload["entry_point"]]
    except BaseException as _selfheal_error:
        _selfheal_entry["valid"] = False
        _selfheal_entry["detail"] = type(_selfheal_error).__name__ + ": " + str(_selfheal_error)
    _selfheal_mutants.append(_selfheal_entry)

_selfheal_calls = 0


def _selfheal_still_needed(index):
    """Whether the candidate at index can still be among the mutants kept. selectMutants takes
    value differences first, in order, one per operator: once the candidates before this one hold
    as many value differences of distinct operators as it keeps, it never reaches this one."""
    operators = set(m["operator"] for m in _selfheal_mutants[:index] if m["difference"] == "value")
    return len(operators) < _selfheal_payload["keep"]


def _selfheal_call_bounded(fn, args, kwargs, seconds):
    """Runs fn with its stdout discarded and a per-call alarm. Returns (kind, value)."""
    try:
        try:
            if _selfheal_can_time:
                _selfheal_signal.setitimer(_selfheal_signal.ITIMER_REAL, seconds)
            with _selfheal_contextlib.redirect_stdout(_selfheal_io.StringIO()):
                value = fn(*args, **kwargs)
            return ("value", value)
        finally:
            if _selfheal_can_time:
                _selfheal_signal.setitimer(_selfheal_signal.ITIMER_REAL, 0)
    except _SelfhealProbeTimeout:
        return ("timeout", None)
    except BaseException as error:
        return ("exception", error)


def _selfheal_recorder(*args, **kwargs):
    global _selfheal_calls
    _selfheal_calls += 1
    try:
        saved = _selfheal_copy.deepcopy((args, kwargs))
    except Exception:
        saved = (args, kwargs)
    started = _selfheal_time.perf_counter()
    expected_error = None
    expected = None
    try:
        expected = _selfheal_reference(*args, **kwargs)
    except Exception as error:
        expected_error = error
    elapsed = _selfheal_time.perf_counter() - started
    # Generous against a slow reference, yet bounded so a hanging mutant costs little.
    limit = min(max(_selfheal_payload["call_timeout_s"], elapsed * 20), 2.0)
    shown_args = _selfheal_short(saved[0])
    for index, mutant in enumerate(_selfheal_mutants):
        if mutant["fn"] is None or mutant["difference"] is not None or not mutant["needed"]:
            continue
        if not _selfheal_still_needed(index):
            mutant["needed"] = False
            continue
        try:
            call_args, call_kwargs = _selfheal_copy.deepcopy(saved)
        except Exception:
            call_args, call_kwargs = saved
        kind, got = _selfheal_call_bounded(mutant["fn"], call_args, call_kwargs, limit)
        if kind == "timeout":
            mutant["difference"] = "timeout"
            mutant["detail"] = "call with %s ran past %.2fs" % (shown_args, limit)
        elif kind == "exception":
            if expected_error is None or type(got) is not type(expected_error):
                mutant["difference"] = "exception"
                mutant["detail"] = "call with %s raised %s: %s" % (shown_args, type(got).__name__, _selfheal_short(str(got), 80))
        elif expected_error is not None:
            mutant["difference"] = "value"
            mutant["detail"] = "call with %s returned %s where the reference raised %s" % (
                shown_args, _selfheal_short(got), type(expected_error).__name__)
        elif not _selfheal_same(expected, got) and not _selfheal_accepts(saved[0], got, expected):
            mutant["difference"] = "value"
            mutant["detail"] = "call with %s returned %s, reference %s" % (
                shown_args, _selfheal_short(got), _selfheal_short(expected))
    if expected_error is not None:
        raise expected_error
    return expected

# ---- prompt, reference solution and hidden tests follow, exactly as the judge runs them ----
`;

const PROBE_FOOTER = String.raw`
# ---- end of task code ----
_selfheal_check_error = None
try:
    _selfheal_reference = globals()[_selfheal_payload["entry_point"]]
    with _selfheal_contextlib.redirect_stdout(_selfheal_io.StringIO()):
        check(_selfheal_recorder)
except BaseException as _selfheal_error:
    _selfheal_check_error = type(_selfheal_error).__name__ + ": " + _selfheal_short(str(_selfheal_error), 200)
finally:
    _selfheal_report = {
        "calls": _selfheal_calls,
        "checkError": _selfheal_check_error,
        "verdicts": [{k: m[k] for k in ("id", "valid", "difference", "detail", "needed")} for m in _selfheal_mutants],
    }
    _selfheal_sys.__stdout__.write("\n__MARKER__" + _selfheal_json.dumps(_selfheal_report) + "\n")
    _selfheal_sys.__stdout__.flush()
`;

export function buildProbeProgram(
  task: BenchmarkTask,
  mutants: ReadonlyArray<{ id: string; solution: string; operator: string }>,
  callTimeoutSeconds: number,
  /** The mutants the caller keeps (`selectMutants`' count): a candidate past the point where they are known is not run further. */
  keep: number,
): string {
  const payload = {
    prompt: task.prompt,
    entry_point: task.entry_point,
    call_timeout_s: callTimeoutSeconds,
    accepts: acceptanceRule(task),
    keep,
    mutants: mutants.map(({ id, solution, operator }) => ({ id, solution, operator })),
  };
  // Base64 keeps arbitrary source text out of Python's string-literal rules.
  const encoded = Buffer.from(JSON.stringify(payload), "utf8").toString("base64");
  return [
    PROBE_PRELUDE.replace("__PAYLOAD__", encoded),
    task.prompt + task.canonical_solution,
    task.test,
    PROBE_FOOTER.replace("__MARKER__", PROBE_MARKER),
  ].join("\n");
}

/** The probe's verdicts, or null when the run died before reporting (timeout, memory, crash). */
export function parseProbeOutput(stdout: string): ProbeVerdict[] | null {
  const line = stdout
    .split("\n")
    .reverse()
    .find((candidate) => candidate.startsWith(PROBE_MARKER));
  if (line === undefined) return null;
  try {
    const parsed = ProbeOutputSchema.safeParse(JSON.parse(line.slice(PROBE_MARKER.length)));
    return parsed.success ? parsed.data.verdicts : null;
  } catch {
    return null;
  }
}
