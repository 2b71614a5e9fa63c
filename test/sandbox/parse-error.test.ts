import { describe, expect, it } from "vitest";

import { parseError } from "../../src/sandbox/parse-error.js";

/**
 * stderr captured from real runs: `python3 -I main.py` (3.11) and `node main.js` (20.x), each in a
 * work dir named like the sandbox names them, so path stripping is exercised on real text.
 */
const CAPTURED = {
  py_type_error:
    'Traceback (most recent call last):\n  File "/tmp/selfheal-run-Q7xK2p/main.py", line 5, in <module>\n    add("a")\n  File "/tmp/selfheal-run-Q7xK2p/main.py", line 2, in add\n    return x + 1\n           ~~^~~\nTypeError: can only concatenate str (not "int") to str\n',
  py_indentation:
    "  File \"/tmp/selfheal-run-Q7xK2p/main.py\", line 3\n    print(2)\n    ^\nIndentationError: expected an indented block after 'if' statement on line 2\n",
  py_syntax:
    "  File \"/tmp/selfheal-run-Q7xK2p/main.py\", line 1\n    values = [1, 2\n             ^\nSyntaxError: '[' was never closed\n",
  py_chained_cause:
    'Traceback (most recent call last):\n  File "/tmp/selfheal-run-Q7xK2p/main.py", line 2, in <module>\n    {}["k"]\n    ~~^^^^^\nKeyError: \'k\'\n\nThe above exception was the direct cause of the following exception:\n\nTraceback (most recent call last):\n  File "/tmp/selfheal-run-Q7xK2p/main.py", line 4, in <module>\n    raise ValueError("bad config") from e\nValueError: bad config\n',
  py_chained_context:
    'Traceback (most recent call last):\n  File "/tmp/selfheal-run-Q7xK2p/main.py", line 2, in <module>\n    1/0\n    ~^~\nZeroDivisionError: division by zero\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File "/tmp/selfheal-run-Q7xK2p/main.py", line 4, in <module>\n    x = undefined_name\n        ^^^^^^^^^^^^^^\nNameError: name \'undefined_name\' is not defined\n',
  py_library_frame:
    'Traceback (most recent call last):\n  File "/tmp/selfheal-run-Q7xK2p/main.py", line 3, in <module>\n    json.loads("{")\n  File "/root/.pyenv/versions/3.11.7/lib/python3.11/json/__init__.py", line 346, in loads\n    return _default_decoder.decode(s)\n           ^^^^^^^^^^^^^^^^^^^^^^^^^^\n  File "/root/.pyenv/versions/3.11.7/lib/python3.11/json/decoder.py", line 337, in decode\n    obj, end = self.raw_decode(s, idx=_w(s, 0).end())\n               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n  File "/root/.pyenv/versions/3.11.7/lib/python3.11/json/decoder.py", line 353, in raw_decode\n    obj, end = self.scan_once(s, idx)\n               ^^^^^^^^^^^^^^^^^^^^^^\njson.decoder.JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)\n',
  py_custom_no_message:
    'Traceback (most recent call last):\n  File "/tmp/selfheal-run-Q7xK2p/main.py", line 4, in <module>\n    raise Boom()\nBoom\n',
  py_multiline:
    'Traceback (most recent call last):\n  File "/tmp/selfheal-run-Q7xK2p/main.py", line 1, in <module>\n    raise ValueError("first line\\nsecond line")\nValueError: first line\nsecond line\n',
  js_type_error:
    "/tmp/selfheal-run-Q7xK2p/main.js:3\no.f();\n  ^\n\nTypeError: o.f is not a function\n    at Object.<anonymous> (/tmp/selfheal-run-Q7xK2p/main.js:3:3)\n    at Module._compile (node:internal/modules/cjs/loader:1521:14)\n    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)\n    at Module.load (node:internal/modules/cjs/loader:1266:32)\n    at Module._load (node:internal/modules/cjs/loader:1091:12)\n    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)\n    at node:internal/main/run_main_module:28:49\n\nNode.js v20.20.2\n",
  js_syntax_eof:
    "/tmp/selfheal-run-Q7xK2p/main.js:3\n\n\n\nSyntaxError: Unexpected end of input\n    at wrapSafe (node:internal/modules/cjs/loader:1464:18)\n    at Module._compile (node:internal/modules/cjs/loader:1495:20)\n    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)\n    at Module.load (node:internal/modules/cjs/loader:1266:32)\n    at Module._load (node:internal/modules/cjs/loader:1091:12)\n    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)\n    at node:internal/main/run_main_module:28:49\n\nNode.js v20.20.2\n",
  js_syntax_mid:
    "/tmp/selfheal-run-Q7xK2p/main.js:2\nconst b = ;\n          ^\n\nSyntaxError: Unexpected token ';'\n    at wrapSafe (node:internal/modules/cjs/loader:1464:18)\n    at Module._compile (node:internal/modules/cjs/loader:1495:20)\n    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)\n    at Module.load (node:internal/modules/cjs/loader:1266:32)\n    at Module._load (node:internal/modules/cjs/loader:1091:12)\n    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)\n    at node:internal/main/run_main_module:28:49\n\nNode.js v20.20.2\n",
  js_throw_string:
    '\n/tmp/selfheal-run-Q7xK2p/main.js:3\nthrow "boom";\n^\nboom\n(Use `node --trace-uncaught ...` to show where the exception was thrown)\n\nNode.js v20.20.2\n',
  js_assert:
    "node:assert:90\n  throw new AssertionError(obj);\n  ^\n\nAssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n\n1 !== 2\n\n    at Object.<anonymous> (/tmp/selfheal-run-Q7xK2p/main.js:2:8)\n    at Module._compile (node:internal/modules/cjs/loader:1521:14)\n    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)\n    at Module.load (node:internal/modules/cjs/loader:1266:32)\n    at Module._load (node:internal/modules/cjs/loader:1091:12)\n    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)\n    at node:internal/main/run_main_module:28:49 {\n  generatedMessage: true,\n  code: 'ERR_ASSERTION',\n  actual: 1,\n  expected: 2,\n  operator: 'strictEqual'\n}\n\nNode.js v20.20.2\n",
  js_esm:
    "file:///tmp/selfheal-run-Q7xK2p/main.js:3\nnull.x;\n     ^\n\nTypeError: Cannot read properties of null (reading 'x')\n    at file:///tmp/selfheal-run-Q7xK2p/main.js:3:6\n    at ModuleJob.run (node:internal/modules/esm/module_job:325:25)\n    at async ModuleLoader.import (node:internal/modules/esm/loader:606:24)\n    at async asyncRunEntryPointWithESMLoader (node:internal/modules/run_main:117:5)\n\nNode.js v20.20.2\n",
  js_nested:
    '/tmp/selfheal-run-Q7xK2p/main.js:2\n  throw new RangeError("too far");\n  ^\n\nRangeError: too far\n    at inner (/tmp/selfheal-run-Q7xK2p/main.js:2:9)\n    at outer (/tmp/selfheal-run-Q7xK2p/main.js:5:3)\n    at Object.<anonymous> (/tmp/selfheal-run-Q7xK2p/main.js:7:1)\n    at Module._compile (node:internal/modules/cjs/loader:1521:14)\n    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)\n    at Module.load (node:internal/modules/cjs/loader:1266:32)\n    at Module._load (node:internal/modules/cjs/loader:1091:12)\n    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)\n    at node:internal/main/run_main_module:28:49\n\nNode.js v20.20.2\n',
  js_unhandled_rejection:
    "node:internal/process/promises:389\n      new UnhandledPromiseRejection(reason);\n      ^\n\nUnhandledPromiseRejection: This error originated either by throwing inside of an async function without a catch block, or by rejecting a promise which was not handled with .catch(). The promise rejected with the reason \"nope\".\n    at throwUnhandledRejectionsMode (node:internal/process/promises:389:7)\n    at processPromiseRejections (node:internal/process/promises:470:17)\n    at process.processTicksAndRejections (node:internal/process/task_queues:96:32) {\n  code: 'ERR_UNHANDLED_REJECTION'\n}\n\nNode.js v20.20.2\n",
};

describe("parseError on Python tracebacks", () => {
  it("reads the type, message and innermost main.py line of a runtime error", () => {
    const error = parseError("python", CAPTURED.py_type_error);
    expect(error).toMatchObject({ type: "TypeError", message: 'can only concatenate str (not "int") to str', line: 2 });
  });

  it("replaces the temporary work dir with the bare file name in the traceback", () => {
    const error = parseError("python", CAPTURED.py_type_error);
    expect(error?.traceback).toContain('File "main.py", line 5, in <module>');
    expect(error?.traceback).not.toContain("/tmp/");
    expect(error?.traceback.startsWith("Traceback (most recent call last):")).toBe(true);
  });

  it("reads an IndentationError, which has a File line but no frame and no Traceback header", () => {
    const error = parseError("python", CAPTURED.py_indentation);
    expect(error).toMatchObject({ type: "IndentationError", line: 3 });
    expect(error?.message).toBe("expected an indented block after 'if' statement on line 2");
  });

  it("reads a SyntaxError with its line", () => {
    expect(parseError("python", CAPTURED.py_syntax)).toMatchObject({
      type: "SyntaxError",
      message: "'[' was never closed",
      line: 1,
    });
  });

  it("reports the last exception of a `raise ... from` chain and keeps the whole chain in the traceback", () => {
    const error = parseError("python", CAPTURED.py_chained_cause);
    expect(error).toMatchObject({ type: "ValueError", message: "bad config", line: 4 });
    expect(error?.traceback).toContain("KeyError: 'k'");
  });

  it("reports the exception raised while handling another one", () => {
    expect(parseError("python", CAPTURED.py_chained_context)).toMatchObject({
      type: "NameError",
      message: "name 'undefined_name' is not defined",
      line: 4,
    });
  });

  it("takes the line from main.py even when the error is raised inside the standard library", () => {
    const error = parseError("python", CAPTURED.py_library_frame);
    expect(error).toMatchObject({ type: "json.decoder.JSONDecodeError", line: 3 });
    expect(error?.message).toMatch(/^Expecting property name/);
  });

  it("reads an exception printed without a message", () => {
    expect(parseError("python", CAPTURED.py_custom_no_message)).toMatchObject({ type: "Boom", message: "", line: 4 });
  });

  it("keeps every line of a multi-line message", () => {
    expect(parseError("python", CAPTURED.py_multiline)?.message).toBe("first line\nsecond line");
  });

  it("returns null when stderr holds no traceback", () => {
    expect(parseError("python", "warning: something odd\n")).toBeNull();
    expect(parseError("python", "")).toBeNull();
  });
});

describe("parseError on Node stack traces", () => {
  it("reads the type, message and line of an uncaught TypeError", () => {
    const error = parseError("javascript", CAPTURED.js_type_error);
    expect(error).toMatchObject({ type: "TypeError", message: "o.f is not a function", line: 3 });
    expect(error?.traceback).toContain("at Object.<anonymous> (main.js:3:3)");
    expect(error?.traceback).not.toContain("/tmp/");
    expect(error?.traceback).not.toContain("Node.js v");
  });

  it("reads a SyntaxError at the end of the file, printed as `main.js:3` with blank source and caret lines", () => {
    expect(parseError("javascript", CAPTURED.js_syntax_eof)).toMatchObject({
      type: "SyntaxError",
      message: "Unexpected end of input",
      line: 3,
    });
  });

  it("reads a SyntaxError in the middle of the file", () => {
    expect(parseError("javascript", CAPTURED.js_syntax_mid)).toMatchObject({
      type: "SyntaxError",
      message: "Unexpected token ';'",
      line: 2,
    });
  });

  it("reads a thrown string, which has no stack", () => {
    expect(parseError("javascript", CAPTURED.js_throw_string)).toMatchObject({
      type: "Uncaught",
      message: "boom",
      line: 3,
    });
  });

  it("reads an AssertionError thrown from node:assert and finds the main.js frame", () => {
    const error = parseError("javascript", CAPTURED.js_assert);
    expect(error).toMatchObject({ type: "AssertionError", line: 2 });
    expect(error?.message).toContain("Expected values to be strictly equal");
  });

  it("reads an error from an ES module, whose paths are file:// URLs", () => {
    const error = parseError("javascript", CAPTURED.js_esm);
    expect(error).toMatchObject({
      type: "TypeError",
      message: "Cannot read properties of null (reading 'x')",
      line: 3,
    });
    expect(error?.traceback).not.toContain("file://");
  });

  it("gives the line where the error was thrown, not where the call started", () => {
    expect(parseError("javascript", CAPTURED.js_nested)).toMatchObject({
      type: "RangeError",
      message: "too far",
      line: 2,
    });
  });

  it("reads an unhandled promise rejection", () => {
    const error = parseError("javascript", CAPTURED.js_unhandled_rejection);
    expect(error?.type).toBe("UnhandledPromiseRejection");
    expect(error?.message).toContain('The promise rejected with the reason "nope"');
    expect(error?.line).toBeNull();
  });

  it("reads V8's fatal out-of-memory report", () => {
    const stderr =
      "\n<--- Last few GCs --->\n\n<--- JS stacktrace --->\n\nFATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\n";
    expect(parseError("javascript", stderr)).toMatchObject({ type: "FatalError", line: null });
  });

  it("returns null when stderr holds no stack trace", () => {
    expect(parseError("javascript", "just a log line\n")).toBeNull();
  });
});
