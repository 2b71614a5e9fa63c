import { NODE_WAIT_FOR_MAIN_KEY } from "../../sandbox/host/bootstrap.js";
import { NODE_CHANNEL } from "./node-channel.js";

/**
 * The program side of the JavaScript judge (see node-judge.ts): preloaded with `--require` into the
 * program process, which runs main.js as `node main.js` would. The program text ends in one line
 * that hands this preload an evaluator of the program's own top-level scope; once the program's
 * first turn is over this side says "ready" on fd 3 and then serves what the tests ask: a name's
 * value, a call, a property, an iteration. Everything here runs with the program and trusts
 * nothing the test side could not check: the test side decodes what comes back as plain data.
 */
export const NODE_PROGRAM_SIDE = String.raw`"use strict";
(() => {
const fs = require("node:fs");
const net = require("node:net");
const util = require("node:util");
try {
  fs.unlinkSync(__filename);
} catch {}
${NODE_CHANNEL}
const FD = 3;
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
const handles = new Map();
const idOf = new Map();
let nextId = 1;
let scope = null;
let ended = false;
const remember = (value) => {
  let id = idOf.get(value);
  if (id === undefined) {
    id = nextId++;
    idOf.set(value, id);
    handles.set(id, value);
  }
  return id;
};
const typeName = (value) => {
  if (typeof value === "function") return /^class[\s{]/.test(Function.prototype.toString.call(value)) ? "class" : "function";
  try {
    const constructor = Object.getPrototypeOf(value)?.constructor;
    if (typeof constructor === "function" && typeof constructor.name === "string" && constructor.name) return constructor.name;
  } catch {}
  return "Object";
};
/** The error classes of a constructor, nearest first, up to a builtin one: [id, name] each, then the builtin's name. */
const errorChain = (constructor) => {
  const chain = [];
  for (let current = constructor; typeof current === "function" && chain.length < 32; current = Object.getPrototypeOf(current)) {
    if (current === Error || (globalThis[current.name] === current && current.prototype instanceof Error)) {
      return { chain, builtin: current.name };
    }
    chain.push([remember(current), String(current.name)]);
  }
  return null;
};
/** The builtin type a value of the program's subclass extends, whose reading methods the tests apply to its plain value. */
const builtinOf = (value) =>
  Array.isArray(value) ? "Array" : value instanceof String ? "String" : value instanceof Map ? "Map" : value instanceof Set ? "Set" : null;
const plainOf = (value) => {
  const builtin = builtinOf(value);
  if (builtin === "Array") return Array.from(value);
  if (builtin === "String") return String.prototype.valueOf.call(value);
  if (builtin === "Map") return new Map(Map.prototype.entries.call(value));
  if (builtin === "Set") return new Set(Set.prototype.values.call(value));
  throw new TypeError("not a value of a builtin type");
};
const opaque = (value) => {
  // An object of the tests the program got goes back as itself (a method's receiver, an argument).
  if (callbackIds.has(value)) return ["c", callbackIds.get(value)];
  const kind = typeof value === "function" ? "function" : typeof value === "symbol" ? "symbol" : "object";
  const handle = ["h", remember(value), kind, typeName(value)];
  if (kind === "symbol") return handle;
  const extra = {};
  try {
    extra.iterable = typeof value[Symbol.iterator] === "function";
    extra.asyncIterable = typeof value[Symbol.asyncIterator] === "function";
  } catch {}
  handle.push(extra);
  try {
    const builtin = builtinOf(value);
    if (builtin !== null) extra.builtin = builtin;
  } catch {}
  if (kind === "function") {
    try {
      extra.name = String(value.name);
    } catch {}
    try {
      const errors = value.prototype instanceof Error || value === Error ? errorChain(value) : null;
      if (errors) extra.errors = errors;
    } catch {}
  }
  return handle;
};
/** A function of the test side: calling it asks the test process, which runs it there. */
const callbacks = new Map();
const callbackIds = new WeakMap();
const reference = (data) => {
  if (data[0] === "h") return handles.get(data[1]);
  if (data[0] === "c") {
    let callback = callbacks.get(data[1]);
    if (callback === undefined) {
      const id = data[1];
      const ask = (request) => {
        let answer;
        try {
          answer = channel.request(request);
        } finally {
          // What the tests sent after their answer came in the same read: it is served as if it
          // had come on its own, or nothing would ever serve it (the tests now wait for it).
          servePending();
        }
        if (answer === null || answer[0] === "exit") throw new Error("selfheal: the test process went away");
        if (answer[1][0] === "e") {
          // The test's own error (a failed assert in a callback) goes back to the tests as it was.
          throw Object.assign(new Error(answer[1][1]), { selfhealTestError: answer[1][2] });
        }
        return codec.decode(answer[1][1]);
      };
      const call = function (...args) {
        return ask(["call", id, codec.encode(this), args.map((item) => codec.encode(item))]);
      };
      // An iterable of the tests (a generator, a Map's keys, an object of theirs) is iterated there.
      const iterate = function () {
        return ask(["iterate", id]);
      };
      const get = (_, key) => {
        if (key === Symbol.iterator) return data[3] === true ? iterate : undefined;
        return typeof key === "string" ? ask(["get", id, key]) : undefined;
      };
      callback = data[2] === "function" ? call : new Proxy({}, { get });
      callbacks.set(id, callback);
      callbackIds.set(callback, id);
    }
    return callback;
  }
  return undefined;
};
const codec = makeCodec(opaque, reference);
const describeError = (error) => {
  if (!(error instanceof Error)) return { thrown: codec.encode(error) };
  const own = {};
  for (const key of Object.keys(error)) {
    try {
      own[key] = codec.encode(error[key]);
    } catch {}
  }
  let chain = null;
  try {
    chain = errorChain(error.constructor);
  } catch {}
  return {
    name: String(error.name),
    message: String(error.message),
    stack: typeof error.stack === "string" ? error.stack : String(error),
    errors: chain,
    own,
    handle: remember(error),
  };
};

/** The program's output during a call, for a test that captures it (a patched console.log). */
const captured = () => {
  const written = [];
  const restore = [];
  for (const method of ["log", "info", "warn", "error", "debug"]) {
    const original = console[method];
    console[method] = (...args) => written.push(["console", method, args.map((item) => codec.encode(item))]);
    restore.push(() => (console[method] = original));
  }
  for (const stream of ["stdout", "stderr"]) {
    const original = process[stream].write;
    process[stream].write = (chunk, ...rest) => {
      written.push([stream, typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8")]);
      const done = rest.find((item) => typeof item === "function");
      if (done) process.nextTick(done);
      return true;
    };
    restore.push(() => (process[stream].write = original));
  }
  return { written, restore: () => restore.forEach((undo) => undo()) };
};

/** Top-level arrays, objects, Maps, Sets and typed arrays a call changed: their new state, to write back. */
const changes = (args, before) =>
  args.flatMap((item, index) => {
    if (item === null || typeof item !== "object") return [];
    const after = JSON.stringify(codec.encode(item));
    return after === before[index] ? [] : [[index, JSON.parse(after)]];
  });

const settle = (outcome) => {
  if (util.types.isPromise(outcome.value)) {
    return outcome.value.then(
      (value) => ({ ...outcome, value: ["v", codec.encode(value)], async: true }),
      (error) => ({ ...outcome, value: ["e", describeError(error)], async: true }),
    );
  }
  return { ...outcome, value: ["v", codec.encode(outcome.value)] };
};

function call(request) {
  const [, id, thisData, argsData, capture, construct] = request;
  const target = handles.get(id);
  const args = argsData.map((item) => codec.decode(item));
  const self = codec.decode(thisData);
  const before = args.map((item) => (item !== null && typeof item === "object" ? JSON.stringify(codec.encode(item)) : null));
  const output = capture ? captured() : null;
  let value;
  try {
    value = construct ? Reflect.construct(target, args) : Reflect.apply(target, self, args);
  } catch (error) {
    output?.restore();
    return ["e", describeError(error), output?.written ?? [], changes(args, before)];
  }
  const finish = (settled) => [settled.value[0], settled.value[1], output?.written ?? [], changes(args, before), settled.async === true];
  const settled = settle({ value });
  if (settled instanceof Promise) {
    return settled.then((done) => {
      output?.restore();
      return finish(done);
    });
  }
  output?.restore();
  return finish(settled);
}

const attempt = (work) => {
  try {
    return ["v", codec.encode(work())];
  } catch (error) {
    return ["e", describeError(error)];
  }
};

/** Where the test side's request is answered; a promise where the answer waits for one. */
function serve(request) {
  switch (request[0]) {
    case "name": {
      const name = request[1];
      if (scope === null || !IDENTIFIER.test(name)) return ["missing"];
      let value;
      try {
        value = scope(name);
      } catch {
        return ["missing"];
      }
      const module = builtinModule(value);
      return module ? ["M", module] : ["v", codec.encode(value)];
    }
    case "call":
      return call(request);
    case "get":
      return attempt(() => Reflect.get(handles.get(request[1]), request[2]));
    case "set":
      return attempt(() => Reflect.set(handles.get(request[1]), request[2], codec.decode(request[3])));
    case "has":
      return attempt(() => Reflect.has(handles.get(request[1]), request[2]));
    case "delete":
      return attempt(() => Reflect.deleteProperty(handles.get(request[1]), request[2]));
    case "own":
      return attempt(() => {
        const target = handles.get(request[1]);
        const own = Object.getOwnPropertyDescriptor(target, request[2]);
        if (!own) return null;
        return { enumerable: own.enumerable, value: "value" in own ? own.value : Reflect.get(target, request[2]) };
      });
    case "keys":
      return attempt(() => Object.keys(handles.get(request[1])));
    case "plain":
      return attempt(() => plainOf(handles.get(request[1])));
    case "iterate":
      return attempt(() => {
        const target = handles.get(request[1]);
        const iterator = request[2] ? target[Symbol.asyncIterator] : target[Symbol.iterator];
        if (typeof iterator !== "function") throw new TypeError(typeName(target) + " is not iterable");
        return { iterator: opaque(iterator.call(target)) };
      });
    case "inspect":
      return attempt(() => util.inspect(handles.get(request[1]), { depth: 4, breakLength: Infinity }));
    case "string":
      return attempt(() => String(handles.get(request[1])));
    case "instanceof":
      return attempt(() => handles.get(request[1]) instanceof handles.get(request[2]));
    case "idle":
      // Answered once the program's own loop has nothing left to do: timers that call back into
      // the tests have run by then (served on the way), and the tests may go on or end.
      return new Promise((resolve) => {
        socket.unref();
        process.once("beforeExit", () => {
          socket.ref();
          resolve(["v", ["b", true]]);
        });
      });
    case "end":
      ended = true;
      if (request[1]) {
        // The tests failed: the program ends as an uncaught error would end it, its exit listeners run.
        socket.destroy();
        process.exit();
      }
      // The tests passed: the program ends when its loop has nothing left to do, as \`node main.js\`
      // would, and once its exit listeners (those it added so far) have run it says so with its
      // status, so the test process need not wait out this process's teardown (~6 ms here).
      socket.pause();
      socket.unref();
      process.on("exit", (code) => {
        try {
          // As the exit will have it: an earlier listener may have set it.
          channel.send(["a", ["ended", process.exitCode ?? code]]);
          // The teardown (~6 ms of a CPU the test process may share) waits until the test process
          // has gone, after the run's end report: its end closes the channel.
          socket._handle.setBlocking(true);
          while (fs.readSync(FD, Buffer.alloc(64)) > 0);
        } catch {}
      });
      return null;
    default:
      return ["e", { name: "Error", message: "unknown request", stack: "" }];
  }
}

/** The name of the builtin module a value is (a program's fs), so the tests take their own. */
function builtinModule(value) {
  if (value === null || (typeof value !== "object" && typeof value !== "function")) return null;
  for (const entry of process.moduleLoadList ?? []) {
    if (!entry.startsWith("NativeModule ")) continue;
    const name = entry.slice("NativeModule ".length);
    if (name.startsWith("internal/") || name.startsWith("_")) continue;
    try {
      if (require("node:" + name) === value) return name;
    } catch {}
  }
  return null;
}

const channel = makeChannel(FD, (request) => {
  // Asked inside a callback, the program is not idle: the tests ask again once the callback is over.
  if (request[0] === "idle") return ["v", ["b", false]];
  const answer = serve(request);
  // A callback the program made into the tests is answered in turn; an async answer there cannot wait.
  return answer instanceof Promise ? ["e", { name: "Error", message: "an async call inside a callback", stack: "" }] : answer;
});
// Started ahead (bootstrap.ts), this side was loaded while the judge loaded: main.js is the program
// once the judge says so, read before the socket below makes the channel non-blocking.
const waitForMain = globalThis[Symbol.for("${NODE_WAIT_FOR_MAIN_KEY}")];
if (typeof waitForMain === "function") waitForMain();
const socket = new net.Socket({ fd: FD, readable: true, writable: false });
let queue = Promise.resolve();
/** Queues every whole request the channel holds, in order, each answered when its turn comes. */
function servePending() {
  for (let frame = channel.pending(); frame !== null; frame = channel.pending()) {
    const request = frame[1];
    queue = queue.then(async () => {
      const answer = await serve(request);
      if (request[0] !== "end") channel.send(["a", answer]);
    });
  }
}
socket.on("data", (chunk) => {
  channel.feed(chunk);
  servePending();
});
socket.on("error", () => {});
// The test process went away: nothing is left to serve, the program ends as it would.
socket.on("close", () => {
  ended = true;
});

Object.defineProperty(globalThis, Symbol.for("selfheal.scope"), {
  value: (evaluate) => {
    scope = evaluate;
  },
  configurable: true,
});
process.on("exit", (code) => {
  if (ended) return;
  try {
    channel.send(["exit", code]);
  } catch {}
});
setImmediate(() => channel.send(["ready"]));
})();
`;
