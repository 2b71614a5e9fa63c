/**
 * The JavaScript half of runtime values, an honest subset of the Python one: written into the work
 * dir as `.selfheal-harness.cjs` and required by a prefix on main.js's first line (see
 * instrument.ts), so line numbers hold on every backend. It opens an inspector session on its own
 * thread that pauses on uncaught exceptions only; at the pause it reads the innermost frames of
 * main.js (arguments and locals, shown with util.inspect, bounded and masked), and for the failed
 * check: a `node:assert` call's actual and expected with the call's argument text, or the two
 * sides of a single comparison in an `if (a !== b) throw`, evaluated again by V8 with
 * `throwOnSideEffect` (an expression that could change anything is not evaluated, and says so).
 * The block goes out on fd 2 from `uncaughtExceptionMonitor`, so an exception that is caught after
 * all writes nothing. No call trace: that is Python's alone. `CONFIG` is prepended per run.
 */
export const NODE_VALUES_HARNESS = String.raw`(() => {
  const fs = require("node:fs");
  const path = require("node:path");
  const util = require("node:util");
  try {
    fs.unlinkSync(__filename);
  } catch {}
  let inspector;
  try {
    inspector = require("node:inspector");
  } catch {
    return;
  }
  const limits = CONFIG.limits;
  const mainPath = path.join(__dirname, "main.js");
  const patterns = CONFIG.secrets.map((source) => new RegExp(source, "g"));
  const secretName = new RegExp(CONFIG.secretNames, "i");
  const environment = Object.values(process.env)
    .filter((value) => typeof value === "string" && value.length >= 8)
    .sort((a, b) => b.length - a.length);
  const SKIPPED = new Set(["exports", "require", "module", "__filename", "__dirname", "this"]);
  let cut = 0;

  const mask = (text) => {
    let masked = text;
    for (const pattern of patterns) masked = masked.replace(pattern, "<masked>");
    for (const value of environment) masked = masked.split(value).join("<masked: environment>");
    return masked;
  };
  const inspectOptions = {
    depth: limits.depth - 1,
    maxArrayLength: limits.items,
    maxStringLength: limits.chars,
    breakLength: Number.POSITIVE_INFINITY,
    customInspect: false,
    getters: false,
  };
  const show = (value, name) => {
    if (typeof name === "string" && secretName.test(name)) return "<masked: secret name>";
    if (value === process.env) return "<environment: not shown>";
    let shown = value;
    if (value && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
      shown = {};
      for (const key of Object.keys(value)) shown[key] = secretName.test(key) ? "<masked: secret name>" : value[key];
    }
    let text;
    try {
      text = util.inspect(shown, inspectOptions);
    } catch (error) {
      text = "<inspect failed: " + (error && error.name) + ">";
    }
    text = text.replace(/\.\.\. (\d+) more characters?/g, (_, count) => {
      cut += Number(count);
      return "[... " + Number(count).toLocaleString("en-US") + " characters cut ...]";
    });
    const most = limits.chars * 2;
    if (text.length > most) {
      cut += text.length - most;
      text = text.slice(0, most) + "[... " + (text.length - most).toLocaleString("en-US") + " characters cut ...]";
    }
    return mask(text);
  };
  Object.defineProperty(globalThis, Symbol.for("selfheal.values"), { value: show });

  const session = new inspector.Session();
  session.connect();
  const post = (method, params) => {
    let result;
    let failure;
    session.post(method, params, (error, value) => {
      failure = error;
      result = value;
    });
    if (failure) throw failure;
    return result;
  };
  const SHOW = "function(name){ return globalThis[Symbol.for('selfheal.values')](this, name); }";
  // Paused frames name their script by id only; the url comes with the script's parse event.
  const mainScripts = new Set();
  session.on("Debugger.scriptParsed", ({ params }) => {
    if (params.url === mainPath || params.url === "file://" + mainPath) mainScripts.add(params.scriptId);
  });
  const isMain = (frame) => mainScripts.has(frame.location.scriptId);
  let source;
  const sourceText = () => {
    // Under the judge (node-judge.ts) main.js holds the program alone; the judge keeps the whole text.
    if (source === undefined) source = globalThis[Symbol.for("selfheal.source")] ?? fs.readFileSync(mainPath, "utf8");
    return source;
  };
  const offsetOf = (location) => {
    const lines = sourceText().split("\n");
    let offset = 0;
    for (let index = 0; index < location.lineNumber; index++) offset += lines[index].length + 1;
    return offset + (location.columnNumber || 0);
  };

  // A forward scan of JavaScript text that knows strings, templates and comments well enough to
  // find brackets and operators at depth 0; whatever it cannot follow, it gives up on.
  const topLevel = (text, visit) => {
    let depth = 0;
    for (let index = 0; index < text.length; index++) {
      const char = text[index];
      if (char === '"' || char === "'" || char === "\x60") {
        let end = index + 1;
        while (end < text.length && text[end] !== char) end += text[end] === "\\" ? 2 : 1;
        if (end >= text.length) return false;
        index = end;
        continue;
      }
      if (char === "/" && (text[index + 1] === "/" || text[index + 1] === "*")) return false;
      if ("([{".includes(char)) depth++;
      else if (")]}".includes(char)) {
        depth--;
        if (depth < 0) {
          visit(index, depth, char);
          return true;
        }
      } else if (depth === 0 && visit(index, depth, char) === false) return true;
    }
    return depth === 0;
  };
  /** "(a, b, c)" starting at the given bracket: the argument texts, or null. */
  const argumentsAt = (text, open) => {
    const args = [];
    let start = open + 1;
    let end = -1;
    const ok = topLevel(text.slice(open + 1), (index, depth, char) => {
      if (depth < 0) {
        end = index;
        return false;
      }
      if (char === ",") {
        args.push(text.slice(start, open + 1 + index));
        start = open + 2 + index;
      }
    });
    if (!ok || end < 0) return null;
    args.push(text.slice(start, open + 1 + end));
    return args.map((arg) => arg.trim()).filter((arg) => arg !== "");
  };
  const CALL = /^[\w$.]+\s*\(/;
  const COMPARISON = /^(===|!==|==|!=|<=|>=|<|>)/;
  /** "left op right" with one comparison at depth 0 and nothing else that binds looser. */
  const comparison = (text) => {
    const found = [];
    const ok = topLevel(text, (index, depth, char) => {
      const rest = text.slice(index);
      if (rest.startsWith("&&") || rest.startsWith("||") || rest.startsWith("??") || "?,;".includes(char))
        found.push(null);
      if (rest.startsWith("=>")) found.push(null);
      const match = COMPARISON.exec(rest);
      if (match && !"=!<>".includes(text[index - 1] || "")) found.push({ index, op: match[1] });
    });
    const real = found.filter((entry, position) => entry === null || found.indexOf(entry) === position);
    if (!ok || real.length !== 1 || real[0] === null) return null;
    const { index, op } = real[0];
    return { left: text.slice(0, index).trim(), op, right: text.slice(index + op.length).trim() };
  };
  /** The condition of the "if (...)" right before a throw at the offset, or null. */
  const conditionBefore = (offset) => {
    const text = sourceText();
    let index = offset - 1;
    while (index >= 0 && /[\s{]/.test(text[index])) index--;
    if (text[index] !== ")") return null;
    const close = index;
    let depth = 0;
    for (; index >= 0; index--) {
      if (text[index] === ")") depth++;
      else if (text[index] === "(") depth--;
      if (depth === 0) break;
    }
    if (index < 0 || !/\bif\s*$/.test(text.slice(Math.max(0, index - 20), index))) return null;
    return text.slice(index + 1, close);
  };
  const evaluate = (frame, expression) => {
    // In an array, so the value stays in the program's heap and is shown there, however big.
    const answer = post("Debugger.evaluateOnCallFrame", {
      callFrameId: frame.callFrameId,
      expression: "[(" + expression + "\n)]",
      throwOnSideEffect: true,
      silent: true,
    });
    if (answer.exceptionDetails || !answer.result.objectId) return undefined;
    const shown = post("Runtime.callFunctionOn", {
      objectId: answer.result.objectId,
      functionDeclaration: "function(){ return globalThis[Symbol.for('selfheal.values')](this[0]); }",
      returnByValue: true,
    });
    return typeof shown.result.value === "string" ? shown.result.value : undefined;
  };

  /** Under the judge (node-judge.ts) a call of the program's is not evaluated again: what it returned at that line. */
  const returnedBy = (line, expression) => {
    const callee = /^(?:[\w$]+\.)*([\w$]+)\s*\(/.exec(expression);
    const lookup = globalThis[Symbol.for("selfheal.returned")];
    const found = callee && typeof lookup === "function" ? lookup(line, callee[1]) : null;
    return found ? show(found.value) : undefined;
  };
  const checkAt = (frames, data) => {
    const site = frames.find((frame) => isMain(frame));
    if (!site) return undefined;
    const line = site.location.lineNumber + 1;
    const offset = offsetOf(site.location);
    if (frames[0] === site && sourceText().startsWith("throw", offset)) {
      const condition = conditionBefore(offset);
      const parts = condition && comparison(condition);
      if (!parts) return undefined;
      return {
        line,
        kind: "if-throw",
        ops: [parts.op],
        parts: [parts.left, parts.right].map((expr) => {
          const value = evaluate(site, expr) ?? returnedBy(line, expr);
          const role = CALL.test(expr) ? "call" : "operand";
          return value === undefined ? { expr, role } : { expr, role, value };
        }),
      };
    }
    if (!data || data.className !== "AssertionError" || !data.objectId) return undefined;
    const open = sourceText().indexOf("(", offset);
    const method = /^[\w$]*/.exec(sourceText().slice(offset))[0];
    const args = open >= 0 ? argumentsAt(sourceText(), open) : null;
    const shown = post("Runtime.callFunctionOn", {
      objectId: data.objectId,
      functionDeclaration:
        "function(){ const show = globalThis[Symbol.for('selfheal.values')]; return [show(this.actual), show(this.expected), String(this.operator)]; }",
      returnByValue: true,
    }).result.value;
    if (!Array.isArray(shown)) return undefined;
    const [actual, expected, operator] = shown;
    return {
      line,
      kind: "assert." + (method || operator),
      ops: [operator],
      parts: [
        { expr: args?.[0] ?? "actual", role: CALL.test(args?.[0] ?? "") ? "call" : "actual", value: actual },
        { expr: args?.[1] ?? "expected", role: "expected", value: expected },
      ],
    };
  };

  // Each scope is read inside the program's own heap, so a 50 MB string never crosses the protocol.
  const LIST_SCOPE =
    "function(skip, most){ const show = globalThis[Symbol.for('selfheal.values')]; const out = [];" +
    " for (const name of Object.getOwnPropertyNames(this)) { if (out.length >= most) break; if (skip.includes(name)) continue;" +
    " let value; try { value = this[name]; } catch { continue; } if (typeof value === 'function') continue;" +
    " out.push([name, show(value, name)]); } return out; }";
  const framesOf = (callFrames) => {
    const frames = [];
    for (const [depth, frame] of callFrames.filter((candidate) => isMain(candidate)).entries()) {
      if (frames.length >= limits.frames) break;
      // A module's own variables are the point only where the module itself failed.
      if (depth > 0 && frame.functionName === "") continue;
      const locals = [];
      for (const scope of frame.scopeChain) {
        if (scope.type !== "local" && scope.type !== "block") continue;
        const listed = post("Runtime.callFunctionOn", {
          objectId: scope.object.objectId,
          functionDeclaration: LIST_SCOPE,
          arguments: [{ value: [...SKIPPED] }, { value: limits.locals - locals.length }],
          returnByValue: true,
        }).result.value;
        if (Array.isArray(listed)) locals.push(...listed);
      }
      if (locals.length > 0) {
        frames.push({ function: frame.functionName || "<module>", line: frame.location.lineNumber + 1, locals });
      }
    }
    return frames;
  };

  let pending = null;
  session.on("Debugger.paused", ({ params }) => {
    try {
      if (params.reason !== "exception" && params.reason !== "promiseRejection") return;
      const block = {};
      const check = checkAt(params.callFrames, params.data);
      if (check) block.assertion = check;
      const frames = framesOf(params.callFrames);
      if (frames.length > 0) block.frames = frames;
      if (cut > 0) block.cut = cut;
      pending = Object.keys(block).length > 0 ? block : null;
    } catch {
      pending = null;
    }
  });
  process.on("uncaughtExceptionMonitor", () => {
    if (!pending) return;
    const json = JSON.stringify(pending).replace(/[\u007f-\uffff]/g, (char) => "\\u" + char.charCodeAt(0).toString(16).padStart(4, "0"));
    const line = "\x1eselfheal-values:" + CONFIG.nonce + " " + json + "\n";
    pending = null;
    try {
      fs.writeSync(2, line);
    } catch {}
  });
  post("Debugger.enable");
  post("Debugger.setPauseOnExceptions", { state: "uncaught" });
})();
`;
