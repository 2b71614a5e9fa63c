import {
  JUDGE_NODE_VARIABLE,
  NODE_AHEAD_KEY,
  NODE_JUDGE_RUN_FILE,
  NODE_PROGRAM_SIDE_RUN_FILE,
  NODE_WITHOUT_REQUIRES,
} from "../../sandbox/host/bootstrap.js";
import { NODE_HARNESS_FILE } from "../runtime-values/instrument.js";
import { NODE_CHANNEL } from "./node-channel.js";

/** The files of an isolated JavaScript run, beside main.js in the work dir. */
export const NODE_JUDGE_FILES = {
  judge: NODE_JUDGE_RUN_FILE,
  programSide: NODE_PROGRAM_SIDE_RUN_FILE,
  program: ".selfheal-program.js",
} as const;

/**
 * The line the program text ends with: it hands the program side an evaluator of the program's own
 * top-level scope, so a test reads a `const` or a `class` of the program as it would in one file.
 */
export const NODE_SCOPE_LINE = `;globalThis[Symbol.for("selfheal.scope")]?.((name) => eval(name));\n`;

/**
 * The test side of the JavaScript judge (see docs/security.md, "What a pass proves"). main.js
 * requires this file, which puts the program in main.js's place and starts it in a process of its
 * own (`node --require <program side> main.js`, the program side in node-program.ts); this process
 * alone reads the tests and the completion secret from stdin, runs the tests with the program's
 * top-level names resolved over the channel when they are read, compares what comes back as plain
 * data decoded by its own code, and writes the completion mark once the tests and both processes'
 * event loops have nothing left to do. The program process never runs the tests' code, and the
 * tests never run the program's: a program's object crosses as a handle whose conversions and
 * comparisons are decided here.
 */
export const NODE_JUDGE = String.raw`"use strict";
(() => {
const fs = require("node:fs");
const path = require("node:path");
const vm = require("node:vm");
const util = require("node:util");
const Module = require("node:module");
const childProcess = require("node:child_process");
const os = require("node:os");
/** A child's end as a shell gives it: its exit code, or 128 + the signal that ended it. */
const exitStatus = (code, signal) => code ?? 128 + (os.constants.signals[signal] || 0);
const ownAssert = require("node:assert");
${NODE_CHANNEL}
const FILES = ${JSON.stringify(NODE_JUDGE_FILES)};
const workDir = __dirname;
const mainPath = path.join(workDir, "main.js");
// SIGUSR1 would open this process's inspector to the program: a listener keeps it shut.
process.on("SIGUSR1", () => {});
${NODE_WITHOUT_REQUIRES}

// Where the sandbox gives an execute-only Node, the tests run in a process started from it, which
// no program of this uid can read or write through /proc; this one only waits and passes its status.
const judgeNode = process.env.${JUDGE_NODE_VARIABLE};
delete process.env.${JUDGE_NODE_VARIABLE};
if (judgeNode && judgeNode !== process.execPath && fs.existsSync(judgeNode)) {
  // A program process started ahead is not this test process's to take.
  globalThis[Symbol.for("${NODE_AHEAD_KEY}")]?.kill("SIGKILL");
  const judge = childProcess.spawn(judgeNode, [...withoutRequires(process.execArgv), __filename, ...process.argv.slice(2)], { stdio: "inherit" });
  judge.on("error", (error) => {
    fs.writeSync(2, "selfheal: the judge could not start its test process: " + error.message + "\n");
    process.exit(1);
  });
  judge.on("exit", (code, signal) => process.exit(exitStatus(code, signal)));
  return;
}
try {
  fs.unlinkSync(__filename);
} catch {}
// The runtime-values harness, when this run records values, watches this process: the tests'.
if (fs.existsSync(path.join(workDir, "${NODE_HARNESS_FILE}"))) require(path.join(workDir, "${NODE_HARNESS_FILE}"));
fs.renameSync(path.join(workDir, FILES.program), mainPath);

// ---- the program process ----
// Started before this process reads the tests, which it never holds: its stdin is not the run's,
// and this process, started from an execute-only Node, cannot be read through /proc.
const child = programProcess();
if (child.pid === undefined) {
  child.on("error", (error) => {
    fs.writeSync(2, "selfheal: the judge could not start the program process: " + error.message + "\n");
    process.exit(1);
  });
  return;
}
const pipe = child.stdio[3];
pipe._handle.readStop();
// Read with blocking calls while the tests wait on it: on a non-blocking one each wait spun, then
// slept a millisecond at a time, for every answer the program was slow to give (its first ones).
// The event loop takes it back, non-blocking, at the tests' end.
pipe._handle.setBlocking(true);
const fd = pipe._handle.fd;
child.unref();
pipe.unref();
const payload = JSON.parse(fs.readFileSync(0, "utf8") || "{}");
const tests = String(payload.tests);
const firstLine = Number(payload.firstLine);
const mark = "\x1eselfheal-tests-done:" + payload.nonce + "\n";
const programText = fs.readFileSync(mainPath, "utf8");
const assembledLines = (programText + "\n".repeat(Math.max(0, firstLine - 1 - programText.split("\n").length + 1)) + tests).split("\n");
// The runtime-values harness, when this run has one, reads the failed line's text from here.
Object.defineProperty(globalThis, Symbol.for("selfheal.source"), { value: assembledLines.join("\n") });

/**
 * The program's process: the one a pool's bootstrap started ahead, which has loaded its program
 * side since the go and waits there for main.js to be the program ("m"), else one started now with
 * the program side preloaded.
 */
function programProcess() {
  const key = Symbol.for("${NODE_AHEAD_KEY}");
  const ahead = globalThis[key];
  if (ahead !== undefined) {
    delete globalThis[key];
    try {
      fs.writeSync(ahead.stdio[3]._handle.fd, "m");
      return ahead;
    } catch {
      ahead.kill("SIGKILL");
    }
  }
  return childProcess.spawn(process.execPath, [...withoutRequires(process.execArgv), "--require", path.join(workDir, FILES.programSide), mainPath, ...process.argv.slice(2)], {
    stdio: ["ignore", "inherit", "inherit", "pipe"],
  });
}
let programEnded = false;
// Whether the program process said it ended: it then waits for this process to end (node-program.ts).
let programSaidEnded = false;
process.on("exit", () => {
  if (!programSaidEnded && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

/** The program process's wait status once it is a zombie (fields of /proc/<pid>/stat), or null. */
function waitStatus() {
  for (let tries = 0; tries < 2000; tries++) {
    let text;
    try {
      text = fs.readFileSync("/proc/" + child.pid + "/stat", "utf8");
    } catch {
      return null;
    }
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    if (fields[0] === "Z" || fields[0] === "X") {
      const status = Number(fields[49]);
      return Number.isInteger(status) ? status : null;
    }
    Atomics.wait(pause, 0, 0, 1);
  }
  return null;
}

class ProgramCrashed extends Error {}
Object.defineProperty(ProgramCrashed.prototype, "name", { value: "ProgramCrashed" });

/**
 * The program process ended while the tests needed it: an exit (a clean one too) ends this process
 * with its status and no completion mark; a signal fails the test that was waiting, as an error.
 */
function programGone(frame, during) {
  programEnded = true;
  const status = waitStatus();
  const signal = status !== null && (status & 0x7f) !== 0 ? status & 0x7f : null;
  const code = status !== null && signal === null ? (status >> 8) & 0xff : frame && frame[0] === "exit" ? Number(frame[1]) || 0 : null;
  if (code !== null) {
    if (during !== null) fs.writeSync(2, "selfheal: the program process exited with status " + code + " during " + during + "\n");
    process.exit(code);
  }
  const name = signal !== null ? Object.keys(os.constants.signals).find((key) => os.constants.signals[key] === signal) || "signal " + signal : "an unknown cause";
  if (during === null) process.exit(signal !== null ? 128 + signal : 1);
  throw new ProgramCrashed("the program process was killed by " + name + " during " + during);
}

const channel = makeChannel(fd, (request) => serveProgram(request));
function ask(message, during) {
  if (programEnded) throw new ProgramCrashed("the program process had already ended before " + during);
  const answer = channel.request(message);
  if (answer === null || answer[0] === "exit") programGone(answer, during);
  return answer[1];
}

// ---- values: plain data decoded here; the program's objects as handles ----
const MISSING = Symbol("missing");
const remotes = new Map();
const remoteIds = new WeakMap();
const remoteNames = new Map();
const locals = new Map();
const localIds = new Map();
const errorChains = new WeakMap();
const testErrors = new Map();
let nextLocal = 1;

const codec = makeCodec(
  (value) => {
    if (remoteIds.has(value)) return ["h", remoteIds.get(value)];
    let id = localIds.get(value);
    if (id === undefined) {
      id = nextLocal++;
      localIds.set(value, id);
      locals.set(id, value);
    }
    let iterable = false;
    try {
      iterable = typeof value[Symbol.iterator] === "function";
    } catch {}
    return ["c", id, typeof value === "function" ? "function" : "object", iterable];
  },
  (data) => {
    if (data[0] === "h") return remote(data);
    // An object of the tests that the program hands back (a method's receiver): the tests' own.
    if (data[0] === "c" && locals.has(data[1])) return locals.get(data[1]);
    throw new TypeError("selfheal: the program process sent a value the judge does not know");
  },
);
const decode = codec.decode;
const encode = (value) => codec.encode(value);

const BUILTIN_ERRORS = { Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError, AggregateError };
const standIns = new Map();
/** A class of this process standing for a program's error class: instanceof and the name hold. */
function standIn(chain, builtin) {
  let parent = Object.hasOwn(BUILTIN_ERRORS, builtin) ? BUILTIN_ERRORS[builtin] : Error;
  for (const [id, name] of [...chain].reverse()) {
    let made = standIns.get(id);
    if (made === undefined) {
      made = class extends parent {};
      Object.defineProperty(made, "name", { value: String(name) });
      standIns.set(id, made);
    }
    parent = made;
  }
  return parent;
}

/** The program's exception as an error of this process: its class stands in, its stack is the program's then the tests'. */
function rebuildError(info) {
  if ("thrown" in info) return decode(info.thrown);
  const own = info.own || {};
  if (own.selfhealTestError && testErrors.has(decode(own.selfhealTestError))) return testErrors.get(decode(own.selfhealTestError));
  const errors = info.errors || { chain: [], builtin: "Error" };
  const Class = standIn(errors.chain, errors.builtin);
  const error = Object.create(Class.prototype);
  Object.defineProperty(error, "message", { value: String(info.message), writable: true, configurable: true });
  for (const [key, item] of Object.entries(own)) {
    if (key === "selfhealTestError") continue;
    Object.defineProperty(error, key, { value: decode(item), writable: true, enumerable: true, configurable: true });
  }
  if (!Object.hasOwn(own, "name") && info.name !== Class.prototype.name) {
    Object.defineProperty(error, "name", { value: String(info.name), writable: true, configurable: true });
  }
  const here = (new Error().stack || "").split("\n").slice(1).filter((line) => line.includes(mainPath));
  Object.defineProperty(error, "stack", { value: [String(info.stack), ...here].join("\n"), writable: true, configurable: true });
  errorChains.set(error, new Set(errors.chain.map(([id]) => id)));
  return error;
}

/** A capture the tests set up (a patched console.log or stream write) is handed what the call printed. */
const originals = {
  log: console.log,
  info: console.info,
  warn: console.warn,
  error: console.error,
  debug: console.debug,
  stdout: process.stdout.write,
  stderr: process.stderr.write,
};
const capturing = () =>
  ["log", "info", "warn", "error", "debug"].some((method) => console[method] !== originals[method]) ||
  process.stdout.write !== originals.stdout ||
  process.stderr.write !== originals.stderr;
function replay(written) {
  for (const entry of written) {
    if (entry[0] === "console") console[entry[1]](...entry[2].map(decode));
    else process[entry[0]].write(String(entry[1]));
  }
}

/** A top-level argument the program changed (a list sorted in place) is changed here to match. */
function writeBack(original, state) {
  const changed = decode(state);
  if (Array.isArray(original) && Array.isArray(changed)) {
    original.length = 0;
    original.push(...changed);
  } else if (original instanceof Map && changed instanceof Map) {
    original.clear();
    for (const [key, item] of changed) original.set(key, item);
  } else if (original instanceof Set && changed instanceof Set) {
    original.clear();
    for (const item of changed) original.add(item);
  } else if (ArrayBuffer.isView(original) && ArrayBuffer.isView(changed) && original.length === changed.length) {
    original.set(changed);
  } else if (original !== null && typeof original === "object" && changed !== null && typeof changed === "object") {
    for (const key of Object.keys(original)) if (!Object.hasOwn(changed, key)) delete original[key];
    Object.assign(original, changed);
  }
}

function call(id, self, args, construct, during) {
  const answer = ask(["call", id, encode(self), args.map(encode), capturing(), construct], during);
  const [tag, payload, written, changes, asynchronous] = answer;
  for (const [index, state] of changes) writeBack(args[index], state);
  replay(written);
  if (tag === "e") {
    const error = rebuildError(payload);
    if (asynchronous) return Promise.reject(error);
    throw error;
  }
  const value = decode(payload);
  if (valuesHarness) remember(id, value);
  return asynchronous ? Promise.resolve(value) : value;
}

// What the tests' calls returned, by test line and function name, for the runtime-values harness:
// it cannot evaluate a call of the program again, the program is in another process.
const valuesHarness = Boolean(globalThis[Symbol.for("selfheal.values")]);
const returned = new Map();
function remember(id, value) {
  const name = remoteNames.get(id);
  const site = (new Error().stack || "").split("\n").find((line) => line.includes(mainPath + ":"));
  const line = site && /:(\d+):\d+\)?$/.exec(site);
  if (name && line) returned.set(line[1] + " " + name, value);
}
Object.defineProperty(globalThis, Symbol.for("selfheal.returned"), {
  value: (line, name) => (returned.has(line + " " + name) ? { value: returned.get(line + " " + name) } : null),
});

/** A request's value, or the program's exception raised here. */
function reply(answer) {
  if (answer[0] === "e") throw rebuildError(answer[1]);
  return decode(answer[1]);
}

const prototypes = new Map();
function standInPrototype(type) {
  let prototype = prototypes.get(type);
  if (prototype === undefined) {
    prototype = Object.create(Object.prototype);
    const constructor = function () {};
    Object.defineProperty(constructor, "name", { value: type });
    Object.defineProperty(prototype, "constructor", { value: constructor });
    prototypes.set(type, prototype);
  }
  return prototype;
}

/** Per builtin type, the methods and properties that only read a value. */
const READING = {
  Array: new Set(["includes", "indexOf", "lastIndexOf", "at", "every", "some", "find", "findIndex", "findLast", "findLastIndex", "join", "length"]),
  String: new Set(["startsWith", "endsWith", "includes", "indexOf", "lastIndexOf", "at", "charAt", "slice", "substring", "toLowerCase", "toUpperCase", "trim", "split", "match", "search", "length"]),
  Map: new Set(["has", "get", "size"]),
  Set: new Set(["has", "size"]),
};

/** The program's value, a handle: every operation asks the program process, every conversion is this side's. */
function remote(data) {
  const [, id, kind, type, extra = {}] = data;
  const known = remotes.get(id);
  if (known) return known;
  const label = kind === "function" ? "[" + type + "]" : "[object " + type + "]";
  const target = kind === "function" ? function () {}.bind(null) : {};
  Object.defineProperty(target, util.inspect.custom, {
    value: () => reply(ask(["inspect", id], "inspecting a value")),
    configurable: true,
  });
  const iterate = (asynchronous) => () => remote(reply(ask(["iterate", id, asynchronous], "iterating over a value")).iterator);
  const errors = extra.errors;
  const proxy = new Proxy(target, {
    get(_, key) {
      if (key === util.inspect.custom) return target[key];
      if (key === Symbol.toPrimitive) {
        return (hint) => (hint === "string" ? reply(ask(["string", id], "converting a value to a string")) : hint === "number" ? Number.NaN : label);
      }
      if (key === Symbol.iterator) return extra.iterable ? iterate(false) : undefined;
      if (key === Symbol.asyncIterator) return extra.asyncIterable ? iterate(true) : undefined;
      if (key === Symbol.hasInstance && kind === "function") {
        return (instance) => {
          if (errorChains.has(instance)) return errorChains.get(instance).has(id);
          if (remoteIds.has(instance)) return reply(ask(["instanceof", remoteIds.get(instance), id], "an instanceof check"));
          return false;
        };
      }
      if (typeof key !== "string") return undefined;
      if (Object.hasOwn(READING, extra.builtin) && READING[extra.builtin].has(key)) {
        // A value of the program's subclass of a builtin type: the builtin's reading methods are
        // applied here to its plain value, never the program's override, which would see the
        // tests' value (an includes that says true to whatever it is asked).
        const plain = reply(ask(["plain", id], "reading ." + key));
        const found = plain[key];
        return typeof found === "function" ? found.bind(plain) : found;
      }
      return reply(ask(["get", id, key], "reading ." + key));
    },
    set(_, key, value) {
      if (typeof key !== "string") return false;
      return reply(ask(["set", id, key, encode(value)], "setting ." + key));
    },
    has(_, key) {
      if (typeof key !== "string") return key === Symbol.iterator ? Boolean(extra.iterable) : false;
      return reply(ask(["has", id, key], "an in check"));
    },
    deleteProperty(_, key) {
      if (typeof key !== "string") return false;
      return reply(ask(["delete", id, key], "deleting ." + key));
    },
    ownKeys() {
      return reply(ask(["keys", id], "listing the keys of a value"));
    },
    getOwnPropertyDescriptor(_, key) {
      if (typeof key !== "string") return Reflect.getOwnPropertyDescriptor(target, key);
      const own = reply(ask(["own", id, key], "reading ." + key));
      if (own === null) return undefined;
      return { value: own.value, writable: true, enumerable: own.enumerable, configurable: true };
    },
    defineProperty(_, key, descriptor) {
      if (typeof key !== "string" || !("value" in descriptor)) return false;
      return reply(ask(["set", id, key, encode(descriptor.value)], "setting ." + key));
    },
    getPrototypeOf() {
      if (kind === "function") return errors ? (Object.hasOwn(BUILTIN_ERRORS, errors.builtin) ? BUILTIN_ERRORS[errors.builtin] : Error) : Function.prototype;
      return standInPrototype(type);
    },
    setPrototypeOf: () => false,
    preventExtensions: () => false,
    apply(_, self, args) {
      return call(id, self, args, false, "the call of " + (kind === "function" ? type === "class" ? "a class" : "a function" : "a value"));
    },
    construct(_, args) {
      return call(id, undefined, args, true, "the construction of a " + type);
    },
  });
  remotes.set(id, proxy);
  remoteIds.set(proxy, id);
  if (typeof extra.name === "string") remoteNames.set(id, extra.name);
  return proxy;
}

/**
 * The properties of an object of the tests the program never reads: they lead from it to code the
 * program would choose, run here (a generator's constructor's constructor is GeneratorFunction,
 * which makes a function of any text), or change what the tests' objects inherit.
 */
const UNREADABLE = new Set(["constructor", "prototype", "__proto__", "__defineGetter__", "__defineSetter__", "__lookupGetter__", "__lookupSetter__", "caller", "callee", "arguments"]);

/** What the program asks of the tests: to call one of their functions (a callback), read a property of their object, or iterate it. */
let servedRequests = 0;
function serveProgram(request) {
  servedRequests++;
  try {
    const target = locals.get(request[1]);
    if (request[0] === "call") return ["v", encode(Reflect.apply(target, decode(request[2]), request[3].map(decode)))];
    if (request[0] === "get") {
      const key = String(request[2]);
      if (UNREADABLE.has(key)) throw new TypeError(key + " of an object of the tests is not the program's to read");
      return ["v", encode(target[key])];
    }
    if (request[0] === "iterate") return ["v", encode(target[Symbol.iterator]())];
    return ["e", "unknown request", null];
  } catch (error) {
    const id = testErrors.size + 1;
    testErrors.set(id, error);
    return ["e", String(error && error.message), ["n", id]];
  }
}

// ---- the tests ----
const first = channel.receive();
if (first === null || first[0] !== "ready") {
  // The program ended before it could serve (its own error is on stderr): its status, no mark.
  programGone(first, null);
}

const words = new Set(tests.match(/[A-Za-z_$][\w$]*/g) || []);
let lookedUp = null;
let lookedUpValue;
/** A free name in the tests that is not this process's global is the program's, read when the test reads it. */
function programName(name) {
  if (name === "assert") return ownAssert;
  const answer = ask(["name", name], "the lookup of " + name);
  if (answer[0] === "missing") return MISSING;
  if (answer[0] === "M") return testRequire(String(answer[1]));
  return decode(answer[1]);
}
const names = new Proxy(Object.create(Object.prototype), {
  has(target, key) {
    if (typeof key !== "string" || !words.has(key) || key in target) return key in target;
    const value = programName(key);
    if (value === MISSING) return false;
    lookedUp = key;
    lookedUpValue = value;
    return true;
  },
  get(target, key, receiver) {
    if (key === lookedUp) {
      const value = lookedUpValue;
      lookedUp = null;
      lookedUpValue = undefined;
      return value;
    }
    if (typeof key !== "string" || !words.has(key) || key in target) return Reflect.get(target, key, receiver);
    const value = programName(key);
    return value === MISSING ? undefined : value;
  },
  set(_, key, value, receiver) {
    return Reflect.defineProperty(receiver, key, { value, writable: true, enumerable: true, configurable: true });
  },
});
Object.setPrototypeOf(globalThis, names);

// The tests require from outside the work dir, which the program can write: node's own modules,
// and installed packages where they are mounted read-only.
let anchor = "/";
try {
  anchor = path.dirname(fs.realpathSync(path.join(workDir, "node_modules")));
} catch {}
if (anchor === workDir || anchor.startsWith(workDir + path.sep)) anchor = "/";
const testRequire = Module.createRequire(path.join(anchor, "selfheal-tests.js"));

/** The judge's own frames (and the loader's below them) are not the tests': they leave the stack. */
function withoutJudgeFrames(error) {
  if (error === null || typeof error !== "object" || typeof error.stack !== "string") return;
  const lines = error.stack.split("\n");
  const judge = lines.findIndex((line) => /^\s+at /.test(line) && line.includes(__filename));
  if (judge === -1) return;
  try {
    error.stack = lines.slice(0, judge).join("\n");
  } catch {}
}

function report(error) {
  withoutJudgeFrames(error);
  const stack = error !== null && typeof error === "object" && typeof error.stack === "string" ? error.stack : "";
  const escaped = mainPath.replace(/[.*+?^$()|[\]\\{}]/g, "\\$&");
  const at = new RegExp(escaped + ":(\\d+):(\\d+)").exec(stack);
  let header = "";
  if (at) {
    const text = assembledLines[Number(at[1]) - 1] ?? "";
    header = mainPath + ":" + at[1] + "\n" + text + "\n" + " ".repeat(Math.max(0, Number(at[2]) - 1)) + "^\n\n";
  }
  let shown;
  try {
    shown = util.inspect(error);
  } catch {
    shown = String(stack || error);
  }
  fs.writeSync(2, header + (error instanceof Error ? shown : "Uncaught " + shown) + "\n\nNode.js " + process.version + "\n");
}

let finished = false;
function fail(error) {
  if (finished) return;
  finished = true;
  report(error);
  if (programEnded) process.exit(1);
  try {
    channel.send(["q", ["end", true]]);
  } catch {}
  child.ref();
  child.on("exit", () => process.exit(1));
}
process.on("uncaughtException", fail);

// The tests have ended when neither process has anything left to do: the program's timers may
// still call back into them until then.
process.on("beforeExit", () => {
  if (finished) return;
  const before = servedRequests;
  const idle = ask(["idle"], "the end of the tests");
  if (servedRequests !== before || idle[0] !== "v" || idle[1][1] !== true) {
    // A callback ran (or the program was in one): what it started (a promise the tests await)
    // goes on, and the check comes again.
    setImmediate(() => {});
    return;
  }
  finished = true;
  fs.writeSync(2, mark);
  channel.send(["q", ["end", false]]);
  child.ref();
  child.on("exit", (code, signal) => {
    process.exitCode = process.exitCode || exitStatus(code, signal);
  });
  // The program process says its status once its exit listeners have run (node-program.ts): the
  // run ends then, not after that process's teardown. Its exit, where it comes first, ends it too.
  pipe.on("data", (chunk) => {
    channel.feed(chunk);
    const said = channel.pending();
    if (Array.isArray(said) && said[0] === "a" && Array.isArray(said[1]) && said[1][0] === "ended") {
      process.exitCode = process.exitCode || Number(said[1][1]) & 0xff;
      programSaidEnded = true;
      process.exit();
    }
  });
  pipe._handle.setBlocking(false);
  pipe._handle.readStart();
});

const wrapped = vm.runInThisContext("(function (exports, require, module, __filename, __dirname) {\n" + tests + "\n})", {
  filename: mainPath,
  lineOffset: firstLine - 2,
});
const testModule = new Module(mainPath, null);
testModule.filename = mainPath;
// Not in a try: an error of the tests stays uncaught, for the values harness's pause and for fail().
wrapped.call(testModule.exports, testModule.exports, testRequire, testModule, mainPath, workDir);
})();
`;
