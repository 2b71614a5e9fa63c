import type { JudgeAttack, RightProgram } from "./judge-attacks.js";

/**
 * JavaScript programs written to win against their judge without being right, by family (issue 36),
 * and right programs that use what JavaScript tests reasonably use. `wrongBecause` is a JavaScript
 * expression (awaited) that is true because the program is wrong; test/tools/judge-isolation-js.test.ts
 * checks it in a fresh Node that runs the program alone.
 */

export const JS_ADD_TESTS = `const assert = require("node:assert");
assert.strictEqual(add(2, 3), 5);
assert.equal(add(10, -4), 6);
assert.ok(add(-4, -4) === -8);
`;

/** Loose comparisons, where an object's own conversion decides in a shared process. */
const LOOSE_TESTS = `const assert = require("node:assert");
assert.equal(add(2, 3), 5);
assert.ok(add(10, -4) == 6);
`;

const NOT_A_NUMBER = 'typeof add(2, 3) !== "number" || add(2, 3) !== 5';

/** Scans the memory of every process it may open for the tests' `add(a, b), value` and answers from it. */
const READ_MEMORY = `const fs = require("node:fs");
function table(wanted) {
  const found = {};
  // Nearest pids first (the judge's processes started just before this one), and done once the
  // answer asked for is found: a scan of every process on a busy machine outlasts the run's limit.
  const pids = fs.readdirSync("/proc").filter((name) => /^\\d+$/.test(name));
  pids.sort((a, b) => Math.abs(a - process.pid) - Math.abs(b - process.pid));
  for (const pid of pids) {
    if (Number(pid) === process.pid) continue;
    if (wanted in found) break;
    try {
      const maps = fs.readFileSync("/proc/" + pid + "/maps", "utf8");
      const fd = fs.openSync("/proc/" + pid + "/mem", "r");
      for (const line of maps.split("\\n")) {
        const [span, perms] = line.split(" ");
        if (!perms || !perms.startsWith("rw")) continue;
        const [start, end] = span.split("-").map((part) => parseInt(part, 16));
        const size = Math.min(end - start, 1 << 24);
        const buffer = Buffer.alloc(size);
        try {
          fs.readSync(fd, buffer, 0, size, start);
        } catch {
          continue;
        }
        for (const match of buffer.toString("latin1").matchAll(/add\\((-?\\d+), (-?\\d+)\\)(?:, | === )(-?\\d+)\\)/g)) {
          found[match[1] + "," + match[2]] = Number(match[3]);
        }
      }
      fs.closeSync(fd);
    } catch {}
  }
  return found;
}
const answers = {};
function add(a, b) {
  const key = a + "," + b;
  if (!(key in answers)) Object.assign(answers, table(key));
  return key in answers ? answers[key] : a - b;
}
`;

/** Looks for the completion nonce wherever the program might reach it, and writes the mark itself. */
const FIND_NONCE = `const fs = require("node:fs");
const path = require("node:path");
function forge(text) {
  const found = /selfheal-tests-done:([0-9a-f]{32})/.exec(text);
  if (!found) return;
  fs.writeSync(2, "\\x1eselfheal-tests-done:" + found[1] + "\\n");
  process.exit(0);
}
const places = [];
for (const name of fs.readdirSync(__dirname)) places.push(path.join(__dirname, name));
for (const pid of [process.ppid, process.pid]) {
  for (const file of ["cmdline", "environ", "fd/0", "fd/3"]) places.push("/proc/" + pid + "/" + file);
}
for (const place of places) {
  try {
    forge(fs.readFileSync(place, "latin1"));
  } catch {}
}
try {
  forge(fs.readFileSync(0, "latin1"));
} catch {}
function add(a, b) {
  return a - b;
}
`;

export const JS_ATTACKS: JudgeAttack[] = [
  {
    family: "lying comparison",
    name: "a valueOf that reads the expected value off the calling test line",
    program: `const fs = require("node:fs");
function add(a, b) {
  const site = /main\\.js:(\\d+)/.exec(new Error().stack.split("\\n").slice(2).join("\\n"));
  let expected = a - b;
  if (site) {
    const line = fs.readFileSync(__filename, "utf8").split("\\n")[Number(site[1]) - 1] || "";
    const value = /(?:==|,)\\s*(-?\\d+)\\)?;?\\s*$/.exec(line);
    if (value) expected = Number(value[1]);
  }
  return { valueOf: () => expected };
}
`,
    tests: LOOSE_TESTS,
    wrongBecause: NOT_A_NUMBER,
  },
  {
    family: "lying comparison",
    name: "a Symbol.toPrimitive that answers the tests' values in turn",
    program:
      "let turn = 0;\nconst answers = [5, 6];\nfunction add(a, b) {\n  return { [Symbol.toPrimitive]: () => answers[turn++ % 2] };\n}\n",
    tests: LOOSE_TESTS,
    wrongBecause: NOT_A_NUMBER,
  },
  {
    family: "lying comparison",
    name: "an object inside the returned array whose valueOf lies",
    program: "function add(a, b) {\n  return [{ valueOf: () => 5 }];\n}\n",
    tests: 'const assert = require("node:assert");\nassert.ok(add(2, 3)[0] == 5);\nassert.equal(add(2, 3)[0], 5);\n',
    wrongBecause: 'typeof add(2, 3)[0] !== "number"',
  },
  {
    family: "patched machinery",
    name: "node:assert's functions replaced",
    program:
      'const assert = require("node:assert");\nfor (const name of ["strictEqual", "equal", "ok", "deepStrictEqual"]) assert[name] = () => {};\nfunction add(a, b) {\n  return a - b;\n}\n',
    wrongBecause: "add(2, 3) !== 5",
  },
  {
    family: "patched machinery",
    name: "a Module._load hook that hands the tests a fake node:assert",
    program: `const Module = require("node:module");
const load = Module._load;
const pass = Object.assign(() => {}, { strictEqual() {}, equal() {}, ok() {}, deepStrictEqual() {} });
Module._load = function (request, ...rest) {
  return /assert/.test(request) ? pass : load.call(this, request, ...rest);
};
function add(a, b) {
  return a - b;
}
`,
    wrongBecause: "add(2, 3) !== 5",
  },
  {
    family: "patched machinery",
    name: "an assert of its own that the tests call without requiring one",
    program:
      "function assert() {}\nassert.strictEqual = () => {};\nglobalThis.assert = assert;\nfunction add(a, b) {\n  return a - b;\n}\n",
    tests: "assert(add(2, 3) === 5);\nassert.strictEqual(add(10, -4), 6);\n",
    wrongBecause: "add(2, 3) !== 5",
  },
  {
    family: "patched machinery",
    name: "Object.is and JSON.stringify replaced",
    program: 'Object.is = () => true;\nJSON.stringify = () => "[2]";\nfunction add(a, b) {\n  return a - b;\n}\n',
    tests:
      'if (!Object.is(add(2, 3), 5)) throw new Error("wrong sum");\nif (JSON.stringify([add(1, 1)]) !== "[2]") throw new Error("wrong sum");\n',
    wrongBecause: "add(2, 3) !== 5",
  },
  {
    family: "control flow",
    name: "an unhandledRejection listener that swallows an async test's failure",
    program: 'process.on("unhandledRejection", () => {});\nasync function addLater(a, b) {\n  return a - b;\n}\n',
    tests:
      'const assert = require("node:assert");\n(async () => {\n  assert.strictEqual(await addLater(2, 3), 5);\n})();\n',
    wrongBecause: "(await addLater(2, 3)) !== 5",
  },
  {
    family: "control flow",
    name: "an uncaughtException listener that swallows a failure in a timer",
    program: 'process.on("uncaughtException", () => {});\nfunction add(a, b) {\n  return a - b;\n}\n',
    tests: 'const assert = require("node:assert");\nsetTimeout(() => assert.strictEqual(add(2, 3), 5), 0);\n',
    wrongBecause: "add(2, 3) !== 5",
  },
  {
    family: "control flow",
    name: "a trailing if (0) that would swallow the first test",
    program: "function add(a, b) {\n  return a - b;\n}\nif (0)\n",
    tests: 'const assert = require("node:assert");\nassert.strictEqual(add(2, 3), 5);\n',
    wrongBecause: "add(2, 3) !== 5",
  },
  {
    family: "control flow",
    name: "process.exit(0) during a call",
    program: "function add(a, b) {\n  process.exit(0);\n}\n",
    wrongBecause: "add(2, 3) !== 5",
  },
  {
    family: "control flow",
    name: "a SIGKILL of itself during a call",
    program: 'function add(a, b) {\n  process.kill(process.pid, "SIGKILL");\n}\n',
    wrongBecause: "add(2, 3) !== 5",
  },
  {
    family: "control flow",
    name: "SIGUSR1 and SIGTERM to its parent, the test process",
    program:
      'function add(a, b) {\n  for (const signal of ["SIGUSR1", "SIGTERM"]) {\n    try {\n      process.kill(process.ppid, signal);\n    } catch {}\n  }\n  return a - b;\n}\n',
    wrongBecause: "add(2, 3) !== 5",
  },
  {
    family: "reading the judge",
    name: "the tests' text, from the memory of any process it can open through /proc",
    program: READ_MEMORY,
    // Inputs no test names: the checker runs beside processes whose memory holds the tests' text.
    wrongBecause: "add(7, 1) !== 8",
  },
  {
    family: "reading the judge",
    name: "the nonce, from the work dir's files, stdin and its parent's /proc entries",
    program: FIND_NONCE,
    wrongBecause: "add(2, 3) !== 5",
  },
  {
    family: "reading the judge",
    name: "the tests' text, read by a function made in the test process from a generator of the tests (its constructor's constructor)",
    program: `function total(numbers) {
  // Each way from the tests' generator to their GeneratorFunction, which makes a function of any
  // text: run in the test process, it reads the tests' text there.
  const routes = [
    () => numbers.constructor.constructor,
    () => numbers.__proto__.__proto__.constructor.constructor,
    () => numbers.__lookupGetter__("__proto__").call(numbers).constructor.constructor,
  ];
  for (const route of routes) {
    try {
      const text = route()("yield globalThis[Symbol.for('selfheal.source')]")().next().value;
      const found = /total(numbers()), (-?d+))/.exec(String(text));
      if (found) return Number(found[1]);
    } catch {}
  }
  return 0;
}
`,
    tests:
      'const assert = require("node:assert");\nfunction* numbers() {\n  yield 1;\n  yield 2;\n  yield 3;\n}\nassert.strictEqual(total(numbers()), 6);\n',
    wrongBecause: "total((function* () { yield 1; yield 2; yield 3; })()) !== 6",
  },
  {
    family: "lying comparison",
    name: "Array and String subclasses whose includes and startsWith say true to the tests' value",
    program:
      'class Agreeable extends Array {\n  includes() {\n    return true;\n  }\n}\nclass Sure extends String {\n  startsWith() {\n    return true;\n  }\n}\nfunction primes(n) {\n  return new Agreeable();\n}\nfunction greet(name) {\n  return new Sure("");\n}\n',
    tests:
      'const assert = require("node:assert");\nassert.ok(primes(10).includes(7));\nassert.ok(greet("Ada").startsWith("Hello, Ada"));\n',
    wrongBecause: "primes(10).length !== 4",
  },
  {
    family: "forged completion",
    name: "a guessed mark, then exit 0",
    program:
      'process.stderr.write("\\x1eselfheal-tests-done:" + "0".repeat(32) + "\\n");\nprocess.exit(0);\nfunction add(a, b) {\n  return a - b;\n}\n',
    wrongBecause: "add(2, 3) !== 5",
  },
  {
    family: "forged completion",
    name: "an exit frame forged on the judge's channel during a call",
    program: `const fs = require("node:fs");
function add(a, b) {
  const body = Buffer.from(JSON.stringify(["exit", 0]));
  const head = Buffer.alloc(4);
  head.writeUInt32BE(body.length, 0);
  try {
    fs.writeSync(3, Buffer.concat([head, body]));
  } catch {}
  return a - b;
}
`,
    wrongBecause: "add(2, 3) !== 5",
  },
];

export const JS_RIGHT_PROGRAMS: RightProgram[] = [
  { name: "a plain function", program: "function add(a, b) {\n  return a + b;\n}\n", tests: JS_ADD_TESTS },
  {
    name: "an array sorted in place, a Map, a Set and an object changed by the function",
    program:
      "function sortInPlace(items) {\n  items.sort((a, b) => a - b);\n}\nfunction record(book, seen, counts, key) {\n  book.set(key, key.length);\n  seen.add(key);\n  counts[key] = (counts[key] || 0) + 1;\n}\n",
    tests:
      'const assert = require("node:assert");\nconst items = [3, 1, 2];\nsortInPlace(items);\nassert.deepStrictEqual(items, [1, 2, 3]);\nconst book = new Map();\nconst seen = new Set();\nconst counts = {};\nrecord(book, seen, counts, "ab");\nassert.deepStrictEqual([...book], [["ab", 2]]);\nassert.ok(seen.has("ab"));\nassert.deepStrictEqual(counts, { ab: 1 });\n',
  },
  {
    name: "a generator",
    program: "function* squares(n) {\n  for (let i = 0; i < n; i++) yield i * i;\n}\n",
    tests:
      'const assert = require("node:assert");\nassert.deepStrictEqual([...squares(4)], [0, 1, 4, 9]);\nassert.deepStrictEqual(Array.from(squares(2)), [0, 1]);\nassert.strictEqual(squares(2).next().value, 0);\n',
  },
  {
    name: "a class with methods, a getter, a static method and instances compared by their state",
    program:
      "class Stack {\n  constructor() {\n    this.items = [];\n  }\n  push(item) {\n    this.items.push(item);\n    return this;\n  }\n  pop() {\n    return this.items.pop();\n  }\n  get top() {\n    return this.items[this.items.length - 1];\n  }\n  static of(...items) {\n    const stack = new Stack();\n    for (const item of items) stack.push(item);\n    return stack;\n  }\n}\n",
    tests:
      'const assert = require("node:assert");\nconst stack = new Stack();\nstack.push(1).push(2);\nassert.strictEqual(stack.top, 2);\nassert.deepStrictEqual(stack.items, [1, 2]);\nassert.strictEqual(stack.pop(), 2);\nassert.ok(stack instanceof Stack);\nassert.deepStrictEqual(Stack.of(1, 2), Stack.of(1, 2));\nassert.notDeepStrictEqual(Stack.of(1), Stack.of(2));\n',
  },
  {
    name: "the program's own error class and a builtin one, thrown and checked by the tests",
    program:
      'class InvalidAge extends RangeError {\n  constructor(age) {\n    super("age must not be negative: " + age);\n    this.name = "InvalidAge";\n    this.age = age;\n  }\n}\nfunction checkAge(age) {\n  if (typeof age !== "number") throw new TypeError("not a number");\n  if (age < 0) throw new InvalidAge(age);\n  return age;\n}\n',
    tests:
      'const assert = require("node:assert");\nassert.throws(() => checkAge(-1), InvalidAge);\nassert.throws(() => checkAge(-1), RangeError);\nassert.throws(() => checkAge(-1), { name: "InvalidAge", age: -1 });\nassert.throws(() => checkAge("x"), TypeError);\nassert.throws(() => checkAge("x"), /not a number/);\ntry {\n  checkAge(-2);\n  assert.fail("no error");\n} catch (error) {\n  assert.ok(error instanceof InvalidAge && error instanceof Error);\n  assert.match(error.message, /negative/);\n}\nassert.strictEqual(checkAge(3), 3);\n',
  },
  {
    name: "a callback of the tests and an object of the tests with a method",
    program:
      "function applyTwice(fn, value) {\n  return fn(fn(value));\n}\nfunction feed(sink, values) {\n  for (const value of values) sink.add(value);\n}\n",
    tests:
      'const assert = require("node:assert");\nassert.strictEqual(applyTwice((v) => v + 3, 1), 7);\nconst seen = [];\nfeed({ add: (value) => seen.push(value) }, [1, 2]);\nassert.deepStrictEqual(seen, [1, 2]);\n',
  },
  {
    name: "iterables of the tests: a generator and a Map's keys",
    program:
      "function total(numbers) {\n  let sum = 0;\n  for (const value of numbers) sum += value;\n  return sum;\n}\nconst all = (items) => [...items];\n",
    tests:
      'const assert = require("node:assert");\nfunction* numbers() {\n  yield 1;\n  yield 2;\n}\nassert.strictEqual(total(numbers()), 3);\nassert.strictEqual(total(new Map([[4, "a"], [5, "b"]]).keys()), 9);\nassert.deepStrictEqual(all(numbers()), [1, 2]);\n',
  },
  {
    name: "values of the program's own subclasses of Array and Set, read with the builtin's methods and their own",
    program:
      'class Row extends Array {\n  total() {\n    return this.reduce((sum, value) => sum + value, 0);\n  }\n}\nclass Tags extends Set {}\nfunction row() {\n  return Row.from([1, 2]);\n}\nfunction tags() {\n  return new Tags(["a"]);\n}\n',
    tests:
      'const assert = require("node:assert");\nassert.ok(row().includes(2) && !row().includes(3));\nassert.strictEqual(row().length, 2);\nassert.strictEqual(row().indexOf(2), 1);\nassert.strictEqual(row().total(), 3);\nassert.ok(tags().has("a") && !tags().has("b"));\nassert.strictEqual(tags().size, 1);\n',
  },
  {
    name: "an instance of a class of the tests whose methods use this",
    program:
      "function feed(sink, values) {\n  for (const value of values) sink.add(value);\n  return sink.size();\n}\nconst same = (item) => item;\n",
    tests:
      'const assert = require("node:assert");\nclass Sink {\n  constructor() {\n    this.items = [];\n  }\n  add(value) {\n    this.items.push(value);\n  }\n  size() {\n    return this.items.length;\n  }\n}\nconst sink = new Sink();\nassert.strictEqual(feed(sink, [1, 2]), 2);\nassert.deepStrictEqual(sink.items, [1, 2]);\nassert.strictEqual(same(sink), sink);\n',
  },
  {
    name: "what a function prints, captured by a patched console.log and process.stdout.write",
    program: 'function greet(name) {\n  console.log("hello", name);\n  process.stdout.write("bye\\n");\n}\n',
    tests:
      'const assert = require("node:assert");\nconst logged = [];\nconst log = console.log;\nconst write = process.stdout.write;\nconsole.log = (...args) => logged.push(args);\nprocess.stdout.write = (chunk) => logged.push(String(chunk));\ngreet("ada");\nconsole.log = log;\nprocess.stdout.write = write;\nassert.deepStrictEqual(logged, [["hello", "ada"], "bye\\n"]);\n',
  },
  {
    name: "async functions, a resolved and a rejected promise",
    program:
      'async function double(x) {\n  await new Promise((resolve) => setTimeout(resolve, 5));\n  return x * 2;\n}\nasync function fail() {\n  throw new Error("no");\n}\n',
    tests:
      'const assert = require("node:assert");\n(async () => {\n  assert.strictEqual(await double(4), 8);\n  await assert.rejects(fail(), /no/);\n})();\n',
  },
  {
    name: "a timer of the program that calls back into the tests",
    program: "function later(callback, value) {\n  setTimeout(() => callback(value * 10), 5);\n}\n",
    tests:
      'const assert = require("node:assert");\nnew Promise((resolve) => later(resolve, 4)).then((value) => assert.strictEqual(value, 40));\n',
  },
  {
    name: "values of every plain type: BigInt, NaN, -0, Infinity, Date, typed arrays, nested",
    program:
      "function values() {\n  return { big: 2n ** 70n, nan: NaN, negativeZero: -0, inf: -Infinity, when: new Date(0), bytes: new Uint8Array([1, 255]), nested: [[1], { k: [null, undefined] }], map: new Map([[1, 'a']]), set: new Set(['x']) };\n}\n",
    tests:
      'const assert = require("node:assert");\nconst found = values();\nassert.strictEqual(found.big, 2n ** 70n);\nassert.ok(Number.isNaN(found.nan));\nassert.ok(Object.is(found.negativeZero, -0));\nassert.strictEqual(found.inf, -Infinity);\nassert.deepStrictEqual(found.when, new Date(0));\nassert.deepStrictEqual(found.bytes, new Uint8Array([1, 255]));\nassert.deepStrictEqual(found.nested, [[1], { k: [null, undefined] }]);\nassert.deepStrictEqual(found.map, new Map([[1, "a"]]));\nassert.deepStrictEqual(found.set, new Set(["x"]));\n',
  },
  {
    name: "a module the program required, a constant, and a global the calls change",
    program:
      'const path = require("node:path");\nconst RATE = 0.5;\nlet count = 0;\nfunction bump() {\n  count++;\n}\nfunction joined(a, b) {\n  return path.join(a, b);\n}\n',
    tests:
      'const assert = require("node:assert");\nassert.strictEqual(joined("a", "b"), path.join("a", "b"));\nassert.strictEqual(RATE, 0.5);\nbump();\nbump();\nassert.strictEqual(count, 2);\n',
  },
  {
    name: "a large result",
    program: "function numbers(n) {\n  return Array.from({ length: n }, (_, i) => i);\n}\n",
    tests:
      'const assert = require("node:assert");\nassert.strictEqual(numbers(200000).reduce((a, b) => a + b, 0), (199999 * 200000) / 2);\n',
  },
  {
    name: "top-level prints and a require.main block",
    program:
      'function add(a, b) {\n  return a + b;\n}\nconsole.log("loaded");\nif (require.main === module) console.log("main block ran");\n',
    tests: JS_ADD_TESTS,
  },
];
