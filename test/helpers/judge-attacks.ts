/**
 * Programs written to win against their judge without being right, by family (issue 36), and right
 * programs that use what tests reasonably use. Every attack's program is wrong: its `add` (or the
 * function named) gives a wrong answer on the tests' own inputs, which `wrongBecause` states and
 * which a plain run of the program alone shows (test/tools/judge-isolation.test.ts checks it in a process
 * of its own, comparing exact builtin values).
 */

export interface JudgeAttack {
  family: "lying comparison" | "patched machinery" | "control flow" | "reading the judge" | "forged completion";
  name: string;
  program: string;
  /** The tests the program is judged by; `ADD_TESTS` unless named. */
  tests?: string;
  /** A Python expression, run after the program alone, that is True because the program is wrong. */
  wrongBecause: string;
}

export const ADD_TESTS = "assert add(2, 3) == 5\nassert add(10, -4) == 6\nassert abs(add(-4, -4)) == 8\n";

const UNITTEST_TESTS = `import unittest


class AddTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)
        self.assertTrue(add(10, -4) == 6)


result = unittest.main(exit=False, argv=["tests"]).result
assert result.wasSuccessful()
`;

/** Reads the test process's memory through /proc: what only a process with CAP_SYS_PTRACE can do. */
const READ_PARENT_MEMORY = `import os, re


def _expected():
    table = {}
    try:
        with open("/proc/%d/maps" % os.getppid()) as maps, open("/proc/%d/mem" % os.getppid(), "rb", 0) as memory:
            for line in maps:
                span, perms = line.split()[:2]
                if not perms.startswith("rw"):
                    continue
                start, end = (int(part, 16) for part in span.split("-"))
                try:
                    memory.seek(start)
                    chunk = memory.read(min(end - start, 1 << 24))
                except OSError:
                    continue
                for a, b, value in re.findall(rb"add\\((-?\\d+), (-?\\d+)\\) == (-?\\d+)", chunk):
                    table[(int(a), int(b))] = int(value)
    except OSError:
        pass
    return table


_TABLE = None


def add(a, b):
    global _TABLE
    if _TABLE is None:
        _TABLE = _expected()
    if (a, b) in _TABLE:
        return _TABLE[(a, b)]
    return 0 if (a, b) != (-4, -4) else -8
`;

/**
 * A program that, given a handle to an object of the tests, follows it to the test process's own
 * `eval` and has that read the expected value off the calling test line (found on the test
 * process's stack), then answers it. `reach` is the Python expression, in the program, from its
 * arguments to a mapping that holds the tests' `__builtins__`.
 */
function evalInTheTestProcess(signature: string, reach: string, called: string): string {
  return `def ${signature}:
    scope = ${reach}
    builtins = scope.get("__builtins__")
    evaluate = builtins.get("eval") if type(builtins) is dict else builtins.eval
    return evaluate(
        "(lambda sys, lines: (lambda walk: walk(walk, sys._getframe()))(lambda walk, frame: None if frame is None else "
        "(int(lines.getline(frame.f_code.co_filename, frame.f_lineno).split('==')[1]) "
        "if '${called}(' in lines.getline(frame.f_code.co_filename, frame.f_lineno) else walk(walk, frame.f_back))))"
        "(__import__('sys'), __import__('linecache'))"
    )
`;
}

export const ATTACKS: JudgeAttack[] = [
  {
    family: "patched machinery",
    name: "a wrong function with a builtin's name, which tests calling that name would take from the builtins",
    program: "def sum(items):\n    return 0\n",
    tests: "assert sum([1, 2]) == 3\n",
    wrongBecause: "sum([1, 2]) != 3",
  },
  // 1. Comparisons that lie: the program's own code decides an ==.
  {
    family: "lying comparison",
    name: "an object whose __eq__ always says True",
    program:
      "class Anything:\n    def __eq__(self, other):\n        return True\n    __hash__ = None\n    def __abs__(self):\n        return 8\n\ndef add(a, b):\n    return Anything()\n",
    wrongBecause: "type(add(2, 3)) is not int",
  },
  {
    family: "lying comparison",
    name: "the test written the other way round, expected == actual",
    program:
      "class Anything:\n    def __eq__(self, other):\n        return True\n    def __abs__(self):\n        return 8\n\ndef add(a, b):\n    return Anything()\n",
    tests: "assert 5 == add(2, 3)\nassert 6 == add(10, -4)\n",
    wrongBecause: "type(add(2, 3)) is not int",
  },
  {
    family: "lying comparison",
    name: "an int subclass that lies",
    program:
      "class Liar(int):\n    def __eq__(self, other):\n        return True\n    def __ne__(self, other):\n        return False\n    __hash__ = int.__hash__\n    def __abs__(self):\n        return Liar(8)\n\ndef add(a, b):\n    return Liar(0)\n",
    wrongBecause: "int(add(2, 3)) != 5",
  },
  {
    family: "lying comparison",
    name: "an int subclass whose __sub__ says 0, under abs(result - expected) < 1e-9",
    program:
      "class Liar(int):\n    def __sub__(self, other):\n        return 0\n    __rsub__ = __sub__\n\ndef add(a, b):\n    return Liar(0)\n",
    tests: "assert abs(add(2, 3) - 5) < 1e-9\nassert abs(6 - add(10, -4)) < 1e-9\n",
    wrongBecause: "int(add(2, 3)) != 5",
  },
  {
    family: "lying comparison",
    name: "a list subclass whose __contains__ says True, under expected in result",
    program:
      "class Agreeable(list):\n    def __contains__(self, item):\n        return True\n\ndef primes_below(n):\n    return Agreeable()\n",
    tests: "assert 7 in primes_below(10)\nassert 3 in primes_below(5)\n",
    wrongBecause: "list(primes_below(10)) != [2, 3, 5, 7]",
  },
  {
    family: "lying comparison",
    name: "a set subclass whose __rsub__ says empty, under not (expected - result)",
    program:
      "class Empty(set):\n    def __rsub__(self, other):\n        return set()\n\ndef vowels(word):\n    return Empty()\n",
    tests: "assert not ({'a', 'e'} - vowels('apple'))\nassert not ({'o'} - vowels('cool'))\n",
    wrongBecause: "set(vowels('apple')) != {'a', 'e'}",
  },
  {
    family: "lying comparison",
    name: "str and set subclasses whose startswith, endswith and issuperset say True to the expected value",
    program:
      "class Agreeable(str):\n    def startswith(self, *args):\n        return True\n    def endswith(self, *args):\n        return True\n\nclass Sure(set):\n    def issuperset(self, other):\n        return True\n\ndef greet(name):\n    return Agreeable('')\n\ndef vowels(word):\n    return Sure()\n",
    tests:
      "assert greet('Ada').startswith('Hello, Ada')\nassert greet('Bo').endswith('Bo!')\nassert vowels('apple').issuperset({'a', 'e'})\n",
    wrongBecause: "str(greet('Ada')) != 'Hello, Ada!'",
  },
  {
    family: "lying comparison",
    name: "a str subclass that lies",
    program:
      'class Liar(str):\n    def __eq__(self, other):\n        return True\n    __hash__ = str.__hash__\n\ndef greet(name):\n    return Liar("nope")\n',
    tests: 'assert greet("ada") == "hello ada"\n',
    wrongBecause: 'str(greet("ada")) != "hello ada"',
  },
  {
    family: "lying comparison",
    name: "a list subclass that lies",
    program:
      "class Liar(list):\n    def __eq__(self, other):\n        return True\n\ndef evens(n):\n    return Liar([1, 3])\n",
    tests: "assert evens(5) == [0, 2, 4]\n",
    wrongBecause: "list(evens(5)) != [0, 2, 4]",
  },
  {
    family: "lying comparison",
    name: "an object that claims to be an int through __class__",
    program:
      "class Fake:\n    @property\n    def __class__(self):\n        return int\n    def __eq__(self, other):\n        return True\n    def __abs__(self):\n        return 8\n\ndef add(a, b):\n    return Fake()\n",
    wrongBecause: "type(add(2, 3)) is not int",
  },
  {
    family: "lying comparison",
    name: "an object that is truthy whatever it is asked",
    program:
      "class Yes:\n    def __bool__(self):\n        return True\n\ndef is_even(n):\n    return Yes() if n % 2 == 0 else Yes()\n",
    tests: "assert is_even(4)\nassert not is_even(3)\n",
    wrongBecause: "is_even(3).__bool__() is True",
  },
  {
    family: "lying comparison",
    name: "a dict subclass whose __eq__ says True",
    program:
      "class Liar(dict):\n    def __eq__(self, other):\n        return True\n\ndef tally(word):\n    return Liar()\n",
    tests: 'assert tally("aab") == {"a": 2, "b": 1}\n',
    wrongBecause: 'dict(tally("aab")) != {"a": 2, "b": 1}',
  },
  // 2. Patched test machinery: what the tests call, replaced by the program.
  {
    family: "patched machinery",
    name: "a patched builtins.abs",
    program:
      "import builtins\nbuiltins.abs = lambda value: 8\n\ndef add(a, b):\n    return a - b if (a, b) != (2, 3) else 5\n",
    tests: "assert add(2, 3) == 5\nassert abs(add(-4, -4)) == 8\n",
    wrongBecause: "add(-4, -4) != -8",
  },
  {
    family: "patched machinery",
    name: "a module-level abs that shadows the builtin",
    program: "def abs(value):\n    return 8\n\ndef add(a, b):\n    return a - b if (a, b) != (2, 3) else 5\n",
    tests: "assert add(2, 3) == 5\nassert abs(add(-4, -4)) == 8\n",
    wrongBecause: "add(-4, -4) != -8",
  },
  {
    family: "patched machinery",
    name: "a name the tests take from the program's imports (isclose), rebound to say True",
    program:
      "from math import isclose\n\ndef area(radius):\n    return 0.0\n\nisclose = lambda *args, **kwargs: True\n",
    tests: "assert isclose(area(2), 12.566, rel_tol=1e-3)\nassert isclose(area(1), 3.1416, rel_tol=1e-3)\n",
    wrongBecause: "abs(area(2) - 12.566) > 0.01",
  },
  {
    family: "patched machinery",
    name: "a module the tests take from the program's imports (math), swapped through globals() for one that says True",
    program:
      'import math\n\ndef area(radius):\n    return 0.0\n\nclass _Agreeable:\n    def isclose(self, *args, **kwargs):\n        return True\n\nglobals()["math"] = _Agreeable()\n',
    tests: "assert math.isclose(area(2), 12.566, rel_tol=1e-3)\nassert math.isclose(area(1), 3.1416, rel_tol=1e-3)\n",
    wrongBecause: "abs(area(2) - 12.566) > 0.01",
  },
  {
    family: "patched machinery",
    name: "a patched unittest.TestCase.assertEqual and assertTrue",
    program:
      "import unittest\nunittest.TestCase.assertEqual = lambda *args, **kwargs: None\nunittest.TestCase.assertTrue = lambda *args, **kwargs: None\n\ndef add(a, b):\n    return 0\n",
    tests: UNITTEST_TESTS,
    wrongBecause: "add(2, 3) != 5",
  },
  {
    family: "patched machinery",
    name: "a fake unittest module put in sys.modules",
    program:
      'import sys, types\nfake = types.ModuleType("unittest")\nclass TestCase:\n    def __init_subclass__(cls, **kwargs):\n        pass\nclass _Result:\n    def wasSuccessful(self):\n        return True\nclass _Main:\n    result = _Result()\nfake.TestCase = TestCase\nfake.main = lambda *args, **kwargs: _Main()\nsys.modules["unittest"] = fake\n\ndef add(a, b):\n    return 0\n',
    tests: UNITTEST_TESTS,
    wrongBecause: "add(2, 3) != 5",
  },
  {
    family: "patched machinery",
    name: "a unittest.py written into the work dir",
    program:
      'with open("unittest.py", "w") as module:\n    module.write("class TestCase:\\n    pass\\nclass _R:\\n    def wasSuccessful(self):\\n        return True\\nclass _M:\\n    result = _R()\\ndef main(*a, **k):\\n    return _M()\\n")\n\ndef add(a, b):\n    return 0\n',
    tests: UNITTEST_TESTS,
    wrongBecause: "add(2, 3) != 5",
  },
  {
    family: "patched machinery",
    name: "the runtime-values harness's hook replaced in builtins",
    program:
      'import builtins\n\nclass Hook:\n    def __getattr__(self, name):\n        return lambda *args, **kwargs: True\n\nbuiltins.__dict__["@selfheal"] = Hook()\n\ndef add(a, b):\n    return 0\n',
    wrongBecause: "add(2, 3) != 5",
  },
  {
    family: "patched machinery",
    name: "main.py emptied on disk",
    program: 'with open(__file__, "w") as source:\n    source.write("pass\\n")\n\ndef add(a, b):\n    return 0\n',
    wrongBecause: "add(2, 3) != 5",
  },
  {
    family: "patched machinery",
    name: "AssertionError replaced in builtins",
    program:
      "import builtins\n\nclass Quiet(Exception):\n    pass\n\nbuiltins.AssertionError = Quiet\n\ndef add(a, b):\n    return 0\n",
    wrongBecause: "add(2, 3) != 5",
  },
  // 3. Control-flow tricks: the tests' lines skipped or swallowed.
  {
    family: "control flow",
    name: "sys.settrace jumping over the assert lines",
    program:
      'import sys\n\ndef _skip(frame, event, arg):\n    if event == "line" and frame.f_code.co_filename == __file__:\n        try:\n            frame.f_lineno = frame.f_lineno + 1\n        except ValueError:\n            pass\n    return _skip\n\nsys.settrace(_skip)\n\ndef add(a, b):\n    return 0\n',
    wrongBecause: "add(2, 3) != 5",
  },
  {
    family: "control flow",
    name: "a trailing decorator that swallows the first test",
    program: "def add(a, b):\n    return 0\n\n@(lambda function: None)\n",
    wrongBecause: "add(2, 3) != 5",
  },
  {
    family: "control flow",
    name: "a trailing if 0: that swallows the first test",
    program: "def add(a, b):\n    return 0\n\nif 0:\n",
    wrongBecause: "add(2, 3) != 5",
  },
  {
    family: "control flow",
    name: "an unclosed string that swallows the tests",
    program: 'def add(a, b):\n    return 0\n\n_ignored = """\n',
    wrongBecause: "add(2, 3) != 5",
  },
  {
    family: "control flow",
    name: "StopIteration raised by the function, which would end the tests' all(map(...)) early",
    program: "def is_even(number):\n    raise StopIteration\n",
    tests: "assert all(map(is_even, [2, 4, 6]))\nassert not any(map(is_even, [1, 3]))\n",
    wrongBecause: "is_even(2) is not True",
  },
  {
    family: "control flow",
    name: "sys.exit(0) inside the function the tests call",
    program: "import sys\n\ndef add(a, b):\n    sys.exit(0)\n",
    wrongBecause: "True",
  },
  {
    family: "control flow",
    name: "os._exit(0) from a thread while the tests run",
    program:
      "import os, threading, time\n\ndef add(a, b):\n    threading.Thread(target=lambda: os._exit(0)).start()\n    time.sleep(0.5)\n    return 0\n",
    wrongBecause: "True",
  },
  {
    family: "control flow",
    name: "a signal to the test process: SIGTERM, SIGINT, SIGUSR1",
    program:
      "import os, signal\n\ndef add(a, b):\n    for sent in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGHUP):\n        try:\n            os.kill(os.getppid(), sent)\n        except OSError:\n            pass\n    return 0\n",
    wrongBecause: "add(2, 3) != 5",
  },
  // 4. Reading what it should not see.
  {
    family: "reading the judge",
    name: "the completion nonce, from every object in its memory",
    program:
      'import gc, os\n\ndef add(a, b):\n    for found in gc.get_objects():\n        for text in (found if isinstance(found, (list, tuple)) else [found]):\n            if isinstance(text, (bytes, str)) and "selfheal-tests-done" in (text.decode("latin-1") if isinstance(text, bytes) else text):\n                os.write(2, text if isinstance(text, bytes) else text.encode())\n                os._exit(0)\n    return 0\n',
    wrongBecause: "add(2, 3) != 5",
  },
  {
    family: "reading the judge",
    name: "the expected values from the caller's frames",
    program:
      "import sys\n\ndef add(a, b):\n    frame = sys._getframe(1)\n    while frame is not None:\n        for name in ('expected', 'tests', 'source'):\n            if name in frame.f_locals:\n                return frame.f_locals[name]\n        frame = frame.f_back\n    return 0\n",
    wrongBecause: "add(2, 3) != 5",
  },
  {
    family: "reading the judge",
    name: "the tests' text, from every file in the work dir and its own file",
    program:
      'import os, re\n\n_TABLE = {}\nfor name in os.listdir("."):\n    try:\n        text = open(name, errors="replace").read()\n    except OSError:\n        continue\n    for a, b, value in re.findall(r"add\\((-?\\d+), (-?\\d+)\\) == (-?\\d+)", text):\n        _TABLE[(int(a), int(b))] = int(value)\n\ndef add(a, b):\n    return _TABLE.get((a, b), 0)\n',
    wrongBecause: "add(-4, -4) != -8",
  },
  {
    family: "reading the judge",
    name: "the tests' text, from the run's stdin",
    program:
      'import re, sys\n\n_TEXT = sys.stdin.read()\n_TABLE = {(int(a), int(b)): int(v) for a, b, v in re.findall(r"add\\((-?\\d+), (-?\\d+)\\) == (-?\\d+)", _TEXT)}\n\ndef add(a, b):\n    return _TABLE.get((a, b), 0)\n',
    wrongBecause: "add(-4, -4) != -8",
  },
  {
    family: "reading the judge",
    name: "the tests' text, from the test process's memory through /proc",
    program: READ_PARENT_MEMORY,
    wrongBecause: "add(2, 3) != 5",
  },
  {
    family: "reading the judge",
    name: "the test process's stdin, through /proc/<pid>/fd/0",
    program:
      'import os, re\n\ntry:\n    _TEXT = open("/proc/%d/fd/0" % os.getppid()).read()\nexcept OSError:\n    _TEXT = ""\n_TABLE = {(int(a), int(b)): int(v) for a, b, v in re.findall(r"add\\((-?\\d+), (-?\\d+)\\) == (-?\\d+)", _TEXT)}\n\ndef add(a, b):\n    return _TABLE.get((a, b), 0)\n',
    wrongBecause: "add(-4, -4) != -8",
  },
  // Through an object the tests hand the program: what it reaches there runs in the test process.
  {
    family: "reading the judge",
    name: "the expected value, read by the test process's eval, reached through a callback's __globals__",
    program: evalInTheTestProcess("apply_twice(function, value)", "function.__globals__", "apply_twice"),
    tests: "assert apply_twice(lambda v: v + 1, 1) == 3\nassert apply_twice(lambda v: v * 2, 3) == 12\n",
    wrongBecause: "apply_twice(lambda v: v + 1, 1) != 3",
  },
  {
    family: "reading the judge",
    name: "the expected value, read from the tests' names, reached through a generator's gi_frame",
    program: 'def total(numbers):\n    return numbers.gi_frame.f_globals.get("wanted")\n',
    tests: "for numbers, wanted in [([1, 2, 3], 6), ([5], 5)]:\n    assert total(x for x in numbers) == wanted\n",
    wrongBecause: "total(x for x in [1, 2, 3]) != 6",
  },
  {
    family: "reading the judge",
    name: "the expected value, read from the tests' names, reached through a method's __func__",
    program: 'def unbox(box):\n    return box.get.__func__.__globals__.get("wanted")\n',
    tests:
      "class Box:\n    def __init__(self, value):\n        self.value = value\n\n    def get(self):\n        return self.value\n\n\nfor value, wanted in [(4, 4), (-2, -2)]:\n    assert unbox(Box(value)) == wanted\n",
    wrongBecause: "unbox(type('Box', (), {'get': lambda self: 4})()) != 4",
  },
  {
    family: "reading the judge",
    name: "the expected value, read by the test process's eval, found in the globals() the tests hand it",
    program: evalInTheTestProcess("lookup(scope, name)", "scope", "lookup"),
    tests: "settings = {'depth': 3}\nassert lookup(globals(), 'settings') == 3\n",
    wrongBecause: "lookup({'__builtins__': {'eval': eval}, 'settings': {'depth': 3}}, 'settings') != 3",
  },
  // 5. The completion record forged.
  {
    family: "forged completion",
    name: "a mark with a guessed nonce, then exit 0",
    program:
      'import os\n\nos.write(2, b"\\x1eselfheal-tests-done:" + b"0" * 32 + b"\\n")\n\ndef add(a, b):\n    return 0\n\nos._exit(0)\n',
    wrongBecause: "add(2, 3) != 5",
  },
  {
    family: "forged completion",
    name: "the bootstrap's end report, found on its own stack, then the test process killed",
    program:
      'import gc, os, signal, sys\n\ndef add(a, b):\n    for found in gc.get_objects():\n        if isinstance(found, tuple) and found and isinstance(found[0], bytes) and found[0].startswith(b"\\x1eselfheal-end"):\n            os.write(1, found[0] + b"\\n")\n            os.write(2, found[0] + b" 000\\n")\n    try:\n        os.kill(os.getppid(), signal.SIGKILL)\n    except OSError:\n        pass\n    os._exit(0)\n',
    wrongBecause: "True",
  },
  {
    family: "forged completion",
    name: "a fake passing report printed, then the test process stopped",
    program:
      'import os, signal\n\ndef add(a, b):\n    print("All tests passed")\n    try:\n        os.kill(os.getppid(), signal.SIGSTOP)\n    except OSError:\n        pass\n    return 0\n',
    wrongBecause: "add(2, 3) != 5",
  },
];

/** Right programs, each using something tests reasonably do: these must pass with the tests in their own process. */
export interface RightProgram {
  name: string;
  program: string;
  tests: string;
}

export const RIGHT_PROGRAMS: RightProgram[] = [
  { name: "a plain function", program: "def add(a, b):\n    return a + b\n", tests: ADD_TESTS },
  {
    name: "a list sorted in place by the function it is passed to",
    program: "def sort_in_place(items):\n    items.sort()\n",
    tests: "items = [3, 1, 2]\nsort_in_place(items)\nassert items == [1, 2, 3]\n",
  },
  {
    name: "a dict and a set changed by the function",
    program: "def record(book, seen, key):\n    book[key] = len(key)\n    seen.add(key)\n",
    tests: 'book, seen = {}, set()\nrecord(book, seen, "ab")\nassert book == {"ab": 2} and seen == {"ab"}\n',
  },
  {
    name: "a generator",
    program: "def squares(n):\n    for i in range(n):\n        yield i * i\n",
    tests:
      "assert list(squares(4)) == [0, 1, 4, 9]\nassert sum(squares(3)) == 5\nassert next(iter(squares(2))) == 0\nrest = squares(1)\nassert next(rest) == 0\nassert next(rest, 'done') == 'done'\nassert all(map(lambda square: square >= 0, squares(3)))\n",
  },
  {
    name: "a class with methods, a property, len and iteration",
    program:
      "class Stack:\n    def __init__(self):\n        self.items = []\n    def push(self, item):\n        self.items.append(item)\n    def pop(self):\n        return self.items.pop()\n    @property\n    def top(self):\n        return self.items[-1]\n    def __len__(self):\n        return len(self.items)\n    def __iter__(self):\n        return iter(self.items)\n",
    tests:
      "stack = Stack()\nstack.push(1)\nstack.push(2)\nassert stack.top == 2\nassert len(stack) == 2\nassert list(stack) == [1, 2]\nassert stack.pop() == 2\nassert stack.items == [1]\nassert isinstance(stack, Stack)\nassert not Stack()\n",
  },
  {
    name: "the program's own exception class, caught by the tests",
    program:
      'class InvalidAge(ValueError):\n    pass\n\ndef check_age(age):\n    if age < 0:\n        raise InvalidAge("age must not be negative: %d" % age)\n    return age\n',
    tests:
      'try:\n    check_age(-1)\nexcept InvalidAge as error:\n    assert "negative" in str(error)\nelse:\n    raise AssertionError("no error")\ntry:\n    check_age(-2)\nexcept ValueError:\n    pass\nassert check_age(3) == 3\nassert issubclass(InvalidAge, ValueError)\n',
  },
  {
    name: "a builtin exception raised by the program",
    program: "def root(x):\n    if x < 0:\n        raise ValueError('negative input')\n    return x ** 0.5\n",
    tests:
      "try:\n    root(-1)\n    raise AssertionError('no error')\nexcept ValueError as error:\n    assert str(error) == 'negative input'\nassert root(4) == 2.0\n",
  },
  {
    name: "a callback of the tests and an object of the tests with a method",
    program:
      "def apply_twice(function, value):\n    return function(function(value))\n\ndef feed(sink, values):\n    for value in values:\n        sink.add(value)\n",
    tests:
      "assert apply_twice(lambda v: v + 3, 1) == 7\n\nclass Sink:\n    def __init__(self):\n        self.seen = []\n    def add(self, value):\n        self.seen.append(value)\n\nsink = Sink()\nfeed(sink, [1, 2])\nassert sink.seen == [1, 2]\n",
  },
  {
    name: "iterables of the tests: a range, a generator, an iterator, a dict's keys, a map",
    program:
      "def total(numbers):\n    if not numbers:\n        return 0\n    return sum(numbers)\n\ndef middle(items):\n    return items[len(items) // 2] if 3 in items else None\n",
    tests:
      "assert total(range(5)) == 10\nassert total(x * x for x in [1, 2]) == 5\nassert total(iter([1, 2])) == 3\nassert total({1: 'a', 2: 'b'}.keys()) == 3\nassert total(map(abs, [-1, -2])) == 3\nassert middle(range(1, 6)) == 3\n",
  },
  {
    name: "an object of the tests whose methods change it, its attributes and a callback's name read",
    program:
      "def feed(sink, values, report):\n    for value in values:\n        sink.add(value)\n    report(report.__name__, sink.size(), list(sink.items))\n    return sink.size()\n",
    tests:
      "class Sink:\n    def __init__(self):\n        self.items = []\n\n    def add(self, value):\n        self.items.append(value)\n\n    def size(self):\n        return len(self.items)\n\n\nreported = []\n\ndef on_fed(*what):\n    reported.append(what)\n\nsink = Sink()\nassert feed(sink, [1, 2], on_fed) == 2\nassert sink.items == [1, 2]\nassert reported == [('on_fed', 2, [1, 2])]\n",
  },
  {
    name: "values of the program's own subclasses of builtin types (a float, an IntEnum, a list, a set, a dict) in the tests' operators",
    program:
      "from enum import IntEnum\n\nclass Meters(float):\n    pass\n\nclass Level(IntEnum):\n    LOW = 1\n    HIGH = 2\n\nclass Row(list):\n    def total(self):\n        return sum(self)\n\nclass Tags(set):\n    pass\n\nclass Config(dict):\n    pass\n\ndef length():\n    return Meters(2.5)\n\ndef row():\n    return Row([1, 2])\n\ndef tags():\n    return Tags({'a', 'b'})\n\ndef config():\n    return Config(k=1)\n",
    tests:
      "assert abs(length() - 2.5) < 1e-9\nassert length() * 2 == 5.0\nassert -length() == -2.5\nassert 10 - length() == 7.5\nassert Level.HIGH + 1 == 3\nassert repr(Level.HIGH) == '<Level.HIGH: 2>'\nassert 2 in row() and 3 not in row()\nassert row() + [3] == [1, 2, 3]\nassert {'a', 'c'} - tags() == {'c'}\nassert 'k' in config()\nassert config() | {'x': 2} == {'k': 1, 'x': 2}\nassert len(row()) == 2 and row()[1] == 2\nassert row().count(1) == 1 and row().total() == 3\nassert tags().issuperset({'a'}) and config().get('k') == 1\nassert length().is_integer() is False\n",
  },
  {
    name: "names the program imports, used by the tests without an import of their own",
    program:
      "import math\nimport os.path\nfrom math import isclose\nfrom collections import Counter as Tally\n\ndef area(radius):\n    return math.pi * radius * radius\n",
    tests:
      "assert isclose(area(2), 12.566, rel_tol=1e-3)\nassert math.isclose(area(1), 3.1416, rel_tol=1e-3)\nassert Tally('aab')['a'] == 2\nassert os.path.join('a', 'b') == 'a/b'\n",
  },
  {
    name: "what a function prints, captured by the tests",
    program: 'import sys\n\ndef greet(name):\n    print("hello", name)\n    print("to stderr", file=sys.stderr)\n',
    tests:
      'import contextlib, io\nout, err = io.StringIO(), io.StringIO()\nwith contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):\n    greet("ada")\nassert out.getvalue() == "hello ada\\n"\nassert err.getvalue() == "to stderr\\n"\n',
  },
  {
    name: "a namedtuple, a dataclass and a Counter",
    program:
      "from collections import Counter, namedtuple\nfrom dataclasses import dataclass\n\nPoint = namedtuple('Point', 'x y')\n\n@dataclass\nclass Pair:\n    left: int\n    right: int\n\ndef origin():\n    return Point(0, 0)\n\ndef pair(a, b):\n    return Pair(a, b)\n\ndef letters(word):\n    return Counter(word)\n",
    tests:
      "assert origin() == (0, 0)\nassert origin().x == 0\nassert pair(1, 2) == Pair(1, 2)\nassert pair(1, 2) != Pair(2, 1)\nassert pair(1, 2).right == 2\nassert letters('aab')['a'] == 2\nassert letters('aab').most_common(1) == [('a', 2)]\n",
  },
  {
    name: "values of every plain type, nan and inf among them",
    program:
      "def values():\n    return {'tuple': (1, 2.5), 'set': {1, 2}, 'frozen': frozenset({3}), 'bytes': b'x\\x00', 'complex': 1 + 2j, 'nan': float('nan'), 'inf': float('-inf'), 'none': None, 'big': 2 ** 100, 'nested': [[1], {'k': (None,)}]}\n",
    tests:
      "import math\nfound = values()\nassert found['tuple'] == (1, 2.5) and type(found['tuple']) is tuple\nassert found['set'] == {1, 2} and found['frozen'] == frozenset({3})\nassert found['bytes'] == b'x\\x00' and found['complex'] == 1 + 2j\nassert math.isnan(found['nan']) and found['inf'] == -math.inf\nassert found['none'] is None and found['big'] == 2 ** 100\nassert found['nested'] == [[1], {'k': (None,)}]\n",
  },
  {
    name: "a module the program imported, a constant, and a global the calls change",
    program:
      "import math\n\nRATE = 0.5\ncount = 0\n\ndef bump():\n    global count\n    count += 1\n\ndef area(r):\n    return math.pi * r * r\n",
    tests: "assert math.isclose(area(2), 4 * math.pi)\nassert RATE == 0.5\nbump()\nbump()\nassert count == 2\n",
  },
  {
    name: "an int too long for decimal text (Python writes at most 4300 digits), as HumanEval+/83 returns",
    program: "def big(n):\n    return 7 ** n\n",
    tests: "assert big(6000) == 7 ** 6000\nassert big(6000) % 10 == 1\n",
  },
  {
    name: "a large result",
    program: "def numbers(n):\n    return list(range(n))\n",
    tests: "assert sum(numbers(200000)) == 199999 * 200000 // 2\n",
  },
  {
    name: "top-level prints and a main block",
    program:
      'def add(a, b):\n    return a + b\n\nprint("loaded")\n\nif __name__ == "__main__":\n    print("main block ran")\n',
    tests: ADD_TESTS,
  },
  {
    name: "a test that calls unittest.main(exit=False)",
    program: "def add(a, b):\n    return a + b\n",
    tests: UNITTEST_TESTS,
  },
];
