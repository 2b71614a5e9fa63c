import type { ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { Socket } from "node:net";
import { join } from "node:path";
import type { Language } from "../types.js";
import { tempDirPrefix } from "./temp-dirs.js";

/** The bootstrap's own part, between these lines, waits for the go; the batch harness leaves it out. */
const WAIT_FOR_GO_START = "# The bootstrap alone, up to the run:";
const WAIT_FOR_GO_END = "# The run:";

/**
 * Pre-warmed runs start the interpreter before the code exists. The bootstrap below tells the host
 * it is ready by writing "r" on fd 3, blocks until the host writes "g" (with the program, which it
 * then writes to main.py, or once main.py is on disk), and runs main.py as `python3 -I main.py`
 * would: a fresh `__main__`, `sys.argv == ["main.py"]`, and a traceback without the bootstrap's
 * own frame, so parseError sees the same text either way.
 * If fd 3 closes first (the host went away), it exits quietly. With "g" comes the run's end mark,
 * which the bootstrap writes after the program's last output (end-report.ts).
 */
/** The Python judge's file beside main.py (src/tools/judge), whose compilation a warm bootstrap keeps ahead. */
export const PYTHON_JUDGE_RUN_FILE = ".selfheal-judge.py";
/** The JavaScript judge's file beside main.js (src/tools/judge/node-judge.ts): a run that has it is judged. */
export const NODE_JUDGE_RUN_FILE = ".selfheal-judge.js";
/** The program side of the JavaScript judge beside main.js, which the program's process preloads. */
export const NODE_PROGRAM_SIDE_RUN_FILE = ".selfheal-serve.js";
/** Beside the Python judge's file: the run's values settings (a JSON line) followed by the program. */
export const PYTHON_JUDGED_PROGRAM_FILE = ".selfheal-judged-program";
/**
 * The Python judge's text begins with a line that names it (\`stampJudge\`): main.py's line reads
 * that line alone where the interpreter holds the judge compiled already, not the whole text (~60
 * KB, whose read and comparison cost ~1 ms of a run on this VM).
 */
const PYTHON_JUDGE_STAMP_START = "# selfheal judge ";
const PYTHON_JUDGE_STAMP_LENGTH = PYTHON_JUDGE_STAMP_START.length + 32 + 1;

/** `text` with its stamp before it: a line of a digest of the text, of a length main.py's line knows. */
export function stampJudge(text: string): string {
  const digest = createHash("sha256").update(text).digest("hex").slice(0, 32);
  return `${PYTHON_JUDGE_STAMP_START}${digest}\n${text}`;
}

const besideMain = (name: string) => `__import__("os").path.join(__import__("os").path.dirname(__file__), "${name}")`;
/** Where main.py's line finds the judge's namespace: run already, forked ahead, cached compiled, or compiled now. */
const PYTHON_JUDGE_NAMESPACE = (() => {
  const held = `c is not None and (s is None or c[0][:${PYTHON_JUDGE_STAMP_LENGTH}] == s)`;
  const ahead = `${held} and len(c) > 2`;
  const compiled = `c[1] if ${held} else compile(open(p, "rb").read(), p, "exec")`;
  return `(c[2] if ${ahead} and c[2].update(g) is None else (c is not None and len(c) > 2 and c[2]["_discard_ahead"](), exec(${compiled}, g), g)[2])`;
})();
/** How far into main.py a judged run's line names the judge's file: a main.py that does not is not judged. */
export const JUDGED_MAIN_HEAD = 1024;
/**
 * main.py of a Python run judged with the tests in their own process (src/tools/judge/prepare.ts):
 * one line, the same for every run (what differs is in the judged program's file), which a
 * bootstrap holding the judge compiles while it waits for its go. It runs the judge's \`_judge\`
 * with the judged program's file. The judge's code comes compiled where the interpreter holds it
 * already (\`sys._selfheal_judge\`, set by a warm bootstrap, a fork server or the benchmark's batch
 * forker, for a text of the same stamp, or for any where the host left the judge's file out, as it
 * does for an interpreter that said it holds one), else compiled here. A warm bootstrap's entry has a third
 * item, the judge's namespace, run already and with the program's process forked ahead
 * (\`_fork_ahead\`): the line takes it, or discards its process when the judge's text differs.
 */
export const PYTHON_JUDGE_LINE = `(lambda p, g, c, s, d: ${PYTHON_JUDGE_NAMESPACE}["_judge"](p, d))(${besideMain(PYTHON_JUDGE_RUN_FILE)}, {"__name__": "selfheal_judge", "VALUES": None}, __import__("sys").__dict__.pop("_selfheal_judge", None), (lambda j: open(j, "rb", 0).read(${PYTHON_JUDGE_STAMP_LENGTH}) if __import__("os").path.exists(j) else None)(${besideMain(PYTHON_JUDGE_RUN_FILE)}), __import__("sys").__dict__.pop("_selfheal_judged_program", None) or open(${besideMain(PYTHON_JUDGED_PROGRAM_FILE)}, "rb").read())\n`;
/**
 * The builtin modules the JavaScript judge's two sides load on every judged run (node-judge.ts,
 * node-program.ts), which a pool's interpreter and its program process started ahead load while
 * they wait (~10 ms each on this VM). A cold judged run loads them too, before the program.
 */
export const NODE_JUDGE_MODULES = {
  tests: ["node:assert", "node:child_process", "node:os", "node:util", "node:vm"],
  program: ["node:net", "node:util"],
} as const;
/** The judge file of each language, whose presence among a run's files makes the run a judged one. */
export const JUDGE_RUN_FILES: Record<Language, string> = {
  python: PYTHON_JUDGE_RUN_FILE,
  javascript: NODE_JUDGE_RUN_FILE,
};
/** The modules the Python judge imports on every judged run, which a warm bootstrap imports ahead with its compilation. */
export const PYTHON_JUDGE_MODULES = [
  "_ast",
  "_ctypes",
  "io",
  "json",
  "linecache",
  "operator",
  "select",
  "signal",
  "traceback",
  "types",
];

/**
 * Python: what interpreter shutdown does that a program can observe, which the bootstrap and the
 * judge's program side both end a program with: join its threads, run atexit, flush. The rest
 * (tearing down every module) takes ~10 ms and nobody sees it, so it is skipped.
 */
export const PYTHON_OBSERVABLE_SHUTDOWN = `
def _flush_streams():
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except BaseException:
            pass


def _observable_shutdown():
    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except BaseException:
            pass
    import atexit

    atexit._run_exitfuncs()
    _flush_streams()
`;

/**
 * A run with an allowlist (sandbox/run/egress.ts) reaches its proxy through a unix socket bound
 * into the sandbox, but `requests`, urllib and curl know only TCP proxies: the first interpreter of
 * the run relays a port of the sandbox's own loopback to the socket, from a process of its own (a
 * grandchild, so the program never waits for it, sees it as a child or shares a thread with it).
 * The program's own interpreter goes on at once; connections wait in the listen queue meanwhile.
 */
export const PYTHON_EGRESS_RELAY = `
import os


def start_egress_relay(path, proxy_url):
    import socket
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", int(proxy_url.rstrip("/").rsplit(":", 1)[1])))
        listener.listen(128)
    except (OSError, ValueError, IndexError):
        # Another process of the run relays already (or there is nothing to relay to).
        listener.close()
        return
    child = os.fork()
    if child:
        listener.close()
        os.waitpid(child, 0)
        return
    try:
        if os.fork():
            os._exit(0)
        import threading
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, listener.fileno())
        os.closerange(listener.fileno() + 1, 65536)

        def pipe(source, target, done):
            try:
                while True:
                    data = source.recv(65536)
                    if not data:
                        break
                    target.sendall(data)
            except OSError:
                pass
            try:
                target.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            done()

        def relay(client):
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(path)
            except OSError:
                client.close()
                upstream.close()
                return
            left = [2]
            lock = threading.Lock()

            def done():
                with lock:
                    left[0] -= 1
                    last = left[0] == 0
                if last:
                    client.close()
                    upstream.close()

            threading.Thread(target=pipe, args=(upstream, client, done), daemon=True).start()
            pipe(client, upstream, done)

        while True:
            client, _ = listener.accept()
            threading.Thread(target=relay, args=(client,), daemon=True).start()
    finally:
        os._exit(0)


if os.environ.get("SELFHEAL_EGRESS_SOCKET"):
    start_egress_relay(os.environ["SELFHEAL_EGRESS_SOCKET"], os.environ.get("HTTP_PROXY", ""))
`;

export const PYTHON_BOOTSTRAP = `
import os, resource, sys, types

# Descriptors the host inherited without close-on-exec pass through spawn and bwrap: close all but
# stdio and the control pipe before anything else runs (os.listdir's own descriptor is closed already).
for fd_dir in ("/proc/self/fd", "/dev/fd"):
    try:
        open_fds = [int(name) for name in os.listdir(fd_dir)]
    except OSError:
        continue
    for fd in open_fds:
        if fd > 3:
            try:
                os.close(fd)
            except OSError:
                pass
    break

# Limits arrive as arguments, "as=536870912:536870912" and so on, and hold before any code exists.
judge_source = None
# A pool's interpreter: it forks a judged run's program process ahead, where it holds the judge.
fork_ahead = False
touch_ahead = True
# A fork server compiled the judge before it forked this process: the modules it imported for it.
judge_modules = globals().get("judge_modules", ())
for setting in sys.argv[1:]:
    name, _, values = setting.partition("=")
    if name == "path":
        # Installed packages go last, so they can never shadow the standard library.
        sys.path.append(values)
        continue
    if name == "judge":
        judge_source = values
        continue
    if name == "ahead":
        fork_ahead = True
        # "busy": started while a run executes, for one that comes right after it (WarmStart).
        touch_ahead = values != "busy"
        continue
    kind = getattr(resource, "RLIMIT_" + name.upper(), None)
    if kind is None:
        continue
    soft, _, hard = values.partition(":")
    soft, hard = int(soft), int(hard)
    current_hard = resource.getrlimit(kind)[1]
    if current_hard != resource.RLIM_INFINITY:
        hard = min(hard, current_hard)
    resource.setrlimit(kind, (min(soft, hard), hard))

${PYTHON_EGRESS_RELAY}
${PYTHON_OBSERVABLE_SHUTDOWN}
def finish(status):
    _observable_shutdown()
    # The end report: the host may take the run as ended here instead of waiting out the exits
    # (this process's, then the sandbox's), which take 5-7 ms. The exit status goes last on stderr,
    # as os._exit will set it; only from this process (not a fork of it the program made), and only
    # onto the pipes the run started with, never onto a file the program put in their place.
    reported = False
    if end_report is not None and type(status) is int and -(2**31) <= status < 2**31:
        mark, pipes_now, pipes, pid = end_report
        try:
            if os.getpid() == pid and pipes_now() == pipes:
                os.write(1, mark + b"\\n")
                os.write(2, mark + b" %03d\\n" % (status & 0xFF))
                reported = True
        except BaseException:
            pass
    # A judged run's program process said it ended (src/tools/judge) and exits once the channel it
    # reads closes: here, after the report, so the run pays nothing for its exit, which is waited
    # for so that the run leaves no process.
    program_process = sys.__dict__.pop("_selfheal_program_process", None)
    if type(program_process) is tuple:
        try:
            pid, channel = program_process
            os.close(channel)
            os.waitpid(pid, 0)
        except BaseException:
            pass
    if reported:
        # The host kills the run once it has the report, so this process's exit (~3 ms of CPU)
        # comes after the host has taken the result, not while it does; a second at most.
        try:
            import signal, time
            signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
            time.sleep(1)
        except BaseException:
            pass
    os._exit(status)


def fresh_main():
    # main.py's module as \`python3 -I main.py\` makes it, and its argv.
    path = os.path.join(os.getcwd(), "main.py")
    sys.argv[:] = ["main.py"]
    module = types.ModuleType("__main__")
    module.__file__ = path
    module.__cached__ = None
    module.__builtins__ = __builtins__
    sys.modules["__main__"] = module
    return path, module


${WAIT_FOR_GO_START}
# Before the go, all that does not need the program: on this VM each step costs several times more
# right after a long sleep than in a loop, and a pre-warmed run's clock starts at the go.
path, module = fresh_main()
# The tests' judge compiled ahead (~10 ms): a judged run's main.py takes it, any other run drops it.
if judge_source is not None:
    try:
        with open(judge_source, "rb") as judge_file:
            judge_text = judge_file.read()
        sys._selfheal_judge = (judge_text, compile(judge_text, os.path.join(os.getcwd(), "${PYTHON_JUDGE_RUN_FILE}"), "exec", dont_inherit=True))
        # And the modules it imports (~7 ms after the go); a run that is not judged drops them again.
        modules_before = set(sys.modules)
        for name in ${JSON.stringify(PYTHON_JUDGE_MODULES)}:
            __import__(name)
        judge_modules = set(sys.modules) - modules_before
    except BaseException:
        pass
# A judged run's second process, forked now rather than on the clock (the judge's _fork_ahead), in
# the judge's namespace, run already: main.py's line takes both. Any other run discards them.
if fork_ahead and getattr(sys, "_selfheal_judge", None) is not None:
    try:
        judge_namespace = {"__name__": "selfheal_judge", "VALUES": None}
        exec(sys._selfheal_judge[1], judge_namespace)
        judge_namespace["_fork_ahead"](touch_ahead)
        sys._selfheal_judge = sys._selfheal_judge[:2] + (judge_namespace,)
    except BaseException:
        pass
# main.py's line for a judged run, the same for every run: compiled now, taken after the go.
judge_line = None
if getattr(sys, "_selfheal_judge", None) is not None:
    try:
        judge_line_text = ${JSON.stringify(PYTHON_JUDGE_LINE)}.encode()
        judge_line = (judge_line_text, compile(judge_line_text, path, "exec"))
    except BaseException:
        judge_line = None
# main.py made now, for a program sent with the go: a write to an open file costs a third of
# creating one. The host leaves out any file or input of that name (the code replaces it anyway).
try:
    program_fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o666)
except OSError:
    program_fd = None


def stdio_pipes():
    return [(os.fstat(fd).st_dev, os.fstat(fd).st_ino) for fd in (1, 2)]


# The end report (see finish) goes to the pipes the host reads, identified now, before any code runs.
# The function that identifies them travels in the report: the batch harness copies finish's text
# without this part, and has no end report.
try:
    run_pipes = stdio_pipes()
except OSError:
    run_pipes = None
run_pid = os.getpid()
# Ready: "j" where the judge is held compiled (the host then leaves the judge's file out of a judged
# run: main.py's line takes the judge held here), else "r".
try:
    os.write(3, b"j" if judge_line is not None else b"r")
except OSError:
    pass


# The go: "g", then (optionally) this run's end mark, 32 hex digits, then "." or, for a program sent
# with the go (the host then writes no main.py), "p", its length in 10 digits and the program.
# Read to its end, not to the pipe's: the host closes the pipe after it, but maybe not at once.
def sent_length(data):
    # The length of the program sent with the go, or None where none follows the mark.
    if data[33:34] != b"p":
        return None
    try:
        return int(data[34:44])
    except ValueError:
        return None


def go_complete(data):
    if data[:1] != b"g" or len(data) < 34:
        return data[:1] not in (b"", b"g")
    length = sent_length(data)
    return length is None or len(data) >= 44 + length


go = b""
while not go_complete(go):
    try:
        part = os.read(3, 65536)
    except OSError:
        break
    if not part:
        break
    go += part
if go[:1] != b"g":
    os._exit(0)
os.close(3)
end_report = None
program_text = None
if len(go) >= 33 and all(byte in b"0123456789abcdef" for byte in go[1:33]):
    if run_pipes is not None:
        end_report = (b"\\x1eselfheal-end " + go[1:33], stdio_pipes, run_pipes, run_pid)
    length = sent_length(go)
    if length is not None:
        if len(go) < 44 + length:
            # The pipe closed partway through the program: run nothing rather than a part of it,
            # or the empty main.py made above.
            os.write(2, b"selfheal: the program did not arrive whole\\n")
            os._exit(1)
        program_text = go[44 : 44 + length]
# A judged run's line, held compiled here, is not written: the judge puts the program in main.py.
if program_text is not None and (judge_line is None or program_text != judge_line[0]):
    # On disk before it runs, as the host would have put it, for what reads it there (tracebacks,
    # __file__, a process started from it).
    if program_fd is None:
        with open(path, "wb") as source:
            source.write(program_text)
    else:
        written = 0
        while written < len(program_text):
            written += os.write(program_fd, program_text[written:])
if program_fd is not None:
    os.close(program_fd)
# A judged run whose judge is held here (the host left the judge's file out): its program process,
# forked ahead, takes its program now, while main.py's line is still to run.
if judge_line is not None and program_text == judge_line[0]:
    held = getattr(sys, "_selfheal_judge", None)
    if held is not None and len(held) > 2 and not os.path.exists(os.path.join(os.path.dirname(path), "${PYTHON_JUDGE_RUN_FILE}")):
        try:
            held[2]["_go_ahead"](path)
        except BaseException:
            pass
${WAIT_FOR_GO_END}
try:
    if program_text is None:
        with open(path, "rb") as source:
            program_text = source.read()
    if b"${PYTHON_JUDGE_RUN_FILE}" not in program_text[:${JUDGED_MAIN_HEAD}]:
        judge_ahead = sys.__dict__.pop("_selfheal_judge", None)
        if judge_ahead is not None and len(judge_ahead) > 2:
            judge_ahead[2]["_discard_ahead"]()
        for name in globals().get("judge_modules", ()):
            sys.modules.pop(name, None)
    # The batch harness runs this part without the one above: it holds no line compiled.
    compiled_line = globals().get("judge_line")
    if compiled_line is not None and program_text == compiled_line[0]:
        code = compiled_line[1]
    else:
        code = compile(program_text, path, "exec")
    exec(code, module.__dict__)
except SystemExit as exit_request:
    status = exit_request.code
    if status is None:
        status = 0
    elif not isinstance(status, int):
        print(status, file=sys.stderr)
        status = 1
    finish(status)
except BaseException as error:
    # Drop the bootstrap's frame; a SyntaxError from compile() has no frame of the program at all.
    trace = error.__traceback__
    error.__traceback__ = None if isinstance(error, SyntaxError) or trace is None else trace.tb_next
    sys.excepthook(type(error), error, error.__traceback__)
    finish(1)
finish(0)
`;

/**
 * The variable that tells the JavaScript judge (src/tools/judge/node-judge.ts) where an execute-only
 * copy of the run's Node is: a process started from a binary it cannot read is not dumpable, so a
 * program of the same uid cannot read or write its memory through /proc/<pid>/mem, which Node has
 * no call of its own to forbid (Python's judge calls prctl).
 */
export const JUDGE_NODE_VARIABLE = "SELFHEAL_JUDGE_NODE";

/** The Node bootstrap's argument (after its file) that has it start a judged run's program process ahead. */
export const NODE_AHEAD_ARGUMENT = "--selfheal-program-ahead";
/** Where the bootstrap leaves the program process it started ahead, for the judge of the run to take. */
export const NODE_AHEAD_KEY = "selfheal.program-ahead";
export const NODE_PROGRAM_AHEAD_FILE_NAME = "selfheal-program-ahead.cjs";

/** Node's flags without the preloads it was started with, for a Node process a run starts (the program's). */
export const NODE_WITHOUT_REQUIRES = `const withoutRequires = (flags) => flags.filter((flag, index) => !(flag === "--require" || flag === "-r" || flag.startsWith("--require=") || flags[index - 1] === "--require" || flags[index - 1] === "-r"));`;

/**
 * Reads from a descriptor that may be non-blocking (`fs` in scope), waiting where it has nothing yet:
 * `readSome` what one read brings into `buffer` at `at` (0 at its end, null on an error),
 * `readByte` one byte (null at its end or on an error).
 */
const NODE_READ_SYNC = `function readSome(fd, buffer, at, length) {
  for (;;) {
    try {
      return fs.readSync(fd, buffer, at, length, null);
    } catch (error) {
      if (error.code !== "EAGAIN") return null;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2);
    }
  }
}
function readByte(fd) {
  const byte = Buffer.alloc(1);
  return readSome(fd, byte, 0, 1) === 1 ? byte[0] : null;
}`;

/**
 * The JavaScript judge's code in the support dir (node-judge.ts puts it there with
 * `provideSupportFile`), which a pool's interpreter that starts a program process ahead compiles
 * while it waits, under the name the judge's file has beside main.js.
 */
export const NODE_JUDGE_SUPPORT_FILE = "selfheal-judge.cjs";
/** Where main.js's line of a judged JavaScript run finds the judge compiled ahead (see NODE_JUDGE_SUPPORT_FILE). */
export const NODE_JUDGE_AHEAD_KEY = "selfheal.judge-ahead";

/** Where the program side (node-program.ts) finds, in a process started ahead, the wait for its main.js. */
export const NODE_WAIT_FOR_MAIN_KEY = "selfheal.wait-for-main";

/**
 * Preloaded into a judged run's program process started ahead (the bootstrap's NODE_AHEAD_ARGUMENT):
 * says it waits ("w" on its channel, fd 3), waits for its start ("s", which the bootstrap sends at
 * a judged run's go), then loads the run's own program side from the work dir, as \`node --require\`
 * would have, while the judge loads in the other process. The program side waits, before its channel
 * is opened, for the judge to say main.js is the program ("m"); main.js runs after the preload.
 * Anything else on the channel, or its end, ends the process before any of the run's code.
 */
export const NODE_PROGRAM_AHEAD = `"use strict";
{
  const fs = require("node:fs");
  const path = require("node:path");
  ${NODE_READ_SYNC}
  for (const name of ${JSON.stringify(NODE_JUDGE_MODULES.program)}) require(name);
  let started = false;
  try {
    fs.writeSync(3, "w");
    started = readByte(3) === 0x73;
  } catch {}
  if (!started) process.reallyExit(0);
  const key = Symbol.for("${NODE_WAIT_FOR_MAIN_KEY}");
  Object.defineProperty(globalThis, key, {
    configurable: true,
    value: () => {
      delete globalThis[key];
      if (readByte(3) !== 0x6d) process.reallyExit(0);
    },
  });
  require(path.join(process.cwd(), "${NODE_PROGRAM_SIDE_RUN_FILE}"));
  // A program side that did not wait (not this build's) ends the process before main.js.
  if (key in globalThis) process.reallyExit(0);
}
`;

/**
 * The Node equivalent, as a file because `node -e` would expose every built-in module (fs, path,
 * ...) as a global and change what the program sees. `Module.runMain()` is what `node main.js`
 * itself calls, so CommonJS/ES module detection and uncaught-error printing are Node's own.
 */
export const NODE_BOOTSTRAP = `"use strict";
const fs = require("node:fs");
const path = require("node:path");
const CONTROL_FD = 3;
// Streams and the CommonJS loader are built lazily on first use; build them now, not on the clock.
void process.stdout;
void process.stderr;
require(path.join(__dirname, "selfheal-warmup.cjs"));
${NODE_WITHOUT_REQUIRES}
${NODE_READ_SYNC}
// A judged run's program process, started while this interpreter waits for its go: its Node start
// (~100 ms here) is off the run's clock. It waits in its preload (${NODE_PROGRAM_AHEAD_FILE_NAME})
// for its start at a judged run's go and holds nothing of any run before it; any other run kills it first.
let ahead = null;
let judgeAhead = null;
if (process.argv[2] === "${NODE_AHEAD_ARGUMENT}") {
  process.argv.splice(2, 1);
  try {
    for (const name of ${JSON.stringify(NODE_JUDGE_MODULES.tests)}) require(name);
    const env = { ...process.env };
    delete env.${JUDGE_NODE_VARIABLE};
    const program = ["--require", path.join(__dirname, "${NODE_PROGRAM_AHEAD_FILE_NAME}"), path.resolve("main.js")];
    ahead = require("node:child_process").spawn(process.execPath, [...withoutRequires(process.execArgv), ...program], {
      stdio: ["ignore", "inherit", "inherit", "pipe"],
      env,
    });
    // Ready once it waits: "w" on its channel.
    if (ahead.pid === undefined || readByte(ahead.stdio[3]._handle.fd) !== 0x77) throw new Error("not started");
  } catch {
    if (ahead !== null) ahead.kill("SIGKILL");
    ahead = null;
  }
  // Taken only with the program process started ahead (see the go below): without it, not compiled.
  if (ahead !== null) judgeAhead = compileJudgeAhead();
}
try {
  fs.writeSync(CONTROL_FD, "r");
} catch {
  // The host may have sent "g" and gone already; whether to run is decided by what we read.
}
if (readByte(CONTROL_FD) !== 0x67) process.exit(0);
const endMark = readEndMark();
fs.closeSync(CONTROL_FD);
process.argv[1] = path.resolve("main.js");
if (ahead !== null) {
  let judged = false;
  try {
    const head = Buffer.alloc(400);
    const fd = fs.openSync(process.argv[1], "r");
    judged = head.subarray(0, fs.readSync(fd, head, 0, 400, 0)).includes("${NODE_JUDGE_RUN_FILE}");
    fs.closeSync(fd);
  } catch {}
  let started = false;
  if (judged) {
    // It loads its program side now, beside this process's loading of the judge (~5 ms each).
    try {
      started = fs.writeSync(ahead.stdio[3]._handle.fd, "s") === 1;
    } catch {}
  }
  if (started) {
    Object.defineProperty(globalThis, Symbol.for("${NODE_AHEAD_KEY}"), { value: ahead, configurable: true });
    if (judgeAhead !== null) Object.defineProperty(globalThis, Symbol.for("${NODE_JUDGE_AHEAD_KEY}"), { value: loadJudgeAhead, configurable: true });
  } else {
    judgeAhead = null;
    ahead.kill("SIGKILL");
    ahead.stdio[3].destroy();
    ahead.unref();
    untilDead(ahead.pid);
  }
}
if (endMark !== null) reportEndAtExit(endMark);
require("node:module").runMain();

// The judge's code from the support dir, compiled as the CommonJS loader would compile the judge's
// file beside main.js (~1.5-3 ms here), or null where there is none yet.
function compileJudgeAhead() {
  try {
    const file = path.resolve("${NODE_JUDGE_RUN_FILE}");
    const text = fs.readFileSync(path.join(__dirname, "${NODE_JUDGE_SUPPORT_FILE}"), "utf8");
    const compiled = require("node:vm").compileFunction(text, ["exports", "require", "module", "__filename", "__dirname"], { filename: file });
    return { file, text, compiled };
  } catch {
    return null;
  }
}

// What main.js's line calls instead of require(file) where the judge was compiled ahead: the same
// module, run from the compiled code where the run's judge file holds the same text, else required.
function loadJudgeAhead(file) {
  delete globalThis[Symbol.for("${NODE_JUDGE_AHEAD_KEY}")];
  const { file: compiledAs, text, compiled } = judgeAhead;
  judgeAhead = null;
  let found = null;
  try {
    found = fs.readFileSync(file, "utf8");
  } catch {}
  if (file !== compiledAs || found !== text) return require(file);
  const Module = require("node:module");
  const module = new Module(file, require.main);
  module.filename = file;
  module.paths = Module._nodeModulePaths(path.dirname(file));
  Module._cache[file] = module;
  compiled.call(module.exports, module.exports, Module.createRequire(file), module, file, path.dirname(file));
  module.loaded = true;
  return module.exports;
}

// Returns once the process is dead (a zombie, which the loop reaps on its first turns, or gone),
// so that the program's first line finds no live process it did not start; 100 ms at most.
function untilDead(pid) {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let tries = 0; tries < 400; tries++) {
    let stat;
    try {
      stat = fs.readFileSync("/proc/" + pid + "/stat", "latin1");
    } catch {
      return;
    }
    if (/\\) [ZX] /.test(stat)) return;
    Atomics.wait(pause, 0, 0, 0.25);
  }
}

// After "g", the run's end mark (32 hex digits) and ".", where the host gives one (end-report.ts):
// read in as few calls as it came in (each costs ~40 us right after a wait, here).
function readEndMark() {
  const mark = Buffer.alloc(33);
  for (let length = 0; length < mark.length; ) {
    const read = readSome(CONTROL_FD, mark, length, mark.length - length);
    if (!read) return null;
    length += read;
  }
  const text = mark.toString("latin1");
  return /^[0-9a-f]{32}\\.$/.test(text) ? text.slice(0, 32) : null;
}

// The end report, after the program's last exit listener has run (process.emit("exit") returns
// then), with the status the exit will have: the host takes the run as ended on it, instead of
// waiting out this process's teardown (~8-10 ms here). Only from this process, only onto the pipes
// the run started with, only with nothing of the program's output still queued, and never after an
// uncaught exception (handled or not); a listener that exits or throws ends the process before it,
// which then ends the run as before.
function reportEndAtExit(mark) {
  const pipes = () => [1, 2].map((fd) => { const stat = fs.fstatSync(fd); return stat.dev + ":" + stat.ino; }).join(" ");
  const started = { pid: process.pid, pipes: pipes() };
  const original = process.emit;
  let reported = false;
  Object.defineProperty(process, "emit", {
    configurable: true,
    writable: true,
    value: function emit(event, ...args) {
      // An uncaught exception's text is printed after the exit event: such a run ends on its exit.
      if (event === "uncaughtExceptionMonitor") reported = true;
      const result = Reflect.apply(original, this, [event, ...args]);
      if (event === "exit" && !reported) {
        reported = true;
        report(mark, process.exitCode ?? args[0] ?? 0, started, pipes);
      }
      return result;
    },
  });
}

function report(mark, status, started, pipes) {
  try {
    const queued = process.stdout.writableLength + process.stderr.writableLength;
    if (!Number.isInteger(status) || queued !== 0 || process.pid !== started.pid || pipes() !== started.pipes) return;
    fs.writeSync(1, "\\x1eselfheal-end " + mark + "\\n");
    fs.writeSync(2, "\\x1eselfheal-end " + mark + " " + String(status & 0xff).padStart(3, "0") + "\\n");
  } catch {
    return;
  }
  // The host kills the run once it has the report, so this process's teardown comes after the
  // host has taken the result, not while it does; a second at most.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
}
`;

export const BOOTSTRAP_FILE_NAME = "selfheal-bootstrap.cjs";
/**
 * The Python judge's code in the support dir, which a warm bootstrap compiles ahead (`judge=`
 * setting) under the name the judge's file has beside main.py (`PYTHON_JUDGE_FILE`). The judge
 * (a layer above) puts it there with `provideSupportFile` when it first prepares a run; an
 * interpreter warmed before that compiles nothing ahead.
 */
export const PYTHON_JUDGE_SUPPORT_FILE = "selfheal-judge.py";

/** The support files this process wrote, by name: what an interpreter that read one holds. */
const providedSupportFiles = new Map<string, string>();

/** Writes a file every run may read into the support dir, once (read-only; nothing in it is secret). */
export function provideSupportFile(name: string, text: string): void {
  const path = join(getSupportDir(), name);
  if (existsSync(path)) return;
  providedSupportFiles.set(name, text);
  const partial = `${path}.${process.pid}.partial`;
  writeFileSync(partial, text, { mode: 0o444 });
  renameSync(partial, path);
}

/**
 * The files of a judged run that an interpreter holding the judge compiled (it said "j" when ready)
 * need not find on disk: the judge's file, where the run's is the text the support dir gave it.
 */
export function filesHeldByInterpreter(language: Language, files: Record<string, string> | undefined): string[] {
  const judge = files?.[PYTHON_JUDGE_RUN_FILE];
  const held = providedSupportFiles.get(PYTHON_JUDGE_SUPPORT_FILE);
  return language === "python" && judge !== undefined && judge === held ? [PYTHON_JUDGE_RUN_FILE] : [];
}

/** The variable that hands the Node preload the host's inheritable descriptors; the preload deletes it. */
export const INHERITED_FDS_VARIABLE = "SELFHEAL_INHERITED_FDS";
export const FD_CLOSER_FILE_NAME = "selfheal-close-fds.cjs";

/**
 * Preloaded (`node --require`) before the program or the bootstrap: closes the descriptors Node
 * inherited, leaving stdio and, for the bootstrap, the control pipe. Node itself marks fds 0-16
 * close-on-exec at start without closing them, so the flag alone cannot tell an inherited fd from
 * Node's own there: the host names the ones it passes on, and any other fd without the flag
 * (inherited, as everything Node opens has it) goes too.
 */
export const NODE_FD_CLOSER = `"use strict";
{
  const fs = require("node:fs");
  const path = require("node:path");
  const keep = new Set([0, 1, 2]);
  if (path.basename(process.argv[1] || "") === "${BOOTSTRAP_FILE_NAME}") keep.add(3);
  const named = (process.env.${INHERITED_FDS_VARIABLE} || "").split(",").filter(Boolean).map(Number);
  delete process.env.${INHERITED_FDS_VARIABLE};
  let open = [];
  try {
    open = fs.readdirSync("/proc/self/fd").map(Number);
  } catch {}
  const inheritable = open.filter((fd) => {
    try {
      const flags = /^flags:\\s*([0-7]+)/m.exec(fs.readFileSync("/proc/self/fdinfo/" + fd, "utf8"));
      return flags !== null && (parseInt(flags[1], 8) & 0o2000000) === 0;
    } catch {
      return false;
    }
  });
  for (const fd of new Set([...named, ...inheritable])) {
    if (keep.has(fd)) continue;
    try {
      fs.closeSync(fd);
    } catch {}
  }
}
`;

/**
 * For a Node program's environment: the descriptors it will inherit from us without our choosing,
 * that is this process's fds without close-on-exec except those the spawn replaces with its own
 * (`ours`: the pipes and the filter; an "ignore" entry passes the host's fd through). Python closes
 * every fd above 3 instead.
 */
export function inheritedFdsEnv(language: Language, ours: readonly number[]): Record<string, string> {
  if (language !== "javascript") return {};
  const passed = inheritableFds().filter((fd) => !ours.includes(fd));
  return passed.length > 0 ? { [INHERITED_FDS_VARIABLE]: passed.join(",") } : {};
}

/** This process's descriptors above stdio that lack close-on-exec (Linux; elsewhere none are known). */
export function inheritableFds(): number[] {
  let names: string[];
  try {
    names = readdirSync("/proc/self/fd");
  } catch {
    return [];
  }
  return names.map(Number).filter((fd) => {
    if (fd <= 2) return false;
    try {
      const flags = /^flags:\s*([0-7]+)/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, "utf8"));
      return flags !== null && (Number.parseInt(flags[1] ?? "0", 8) & O_CLOEXEC) === 0;
    } catch {
      return false;
    }
  });
}

const O_CLOEXEC = 0o2000000;

/**
 * Whether a run starts through the bootstrap. Python always does, pre-warmed or not: the bootstrap
 * skips the ~10 ms of module teardown at exit that no program can observe, and one code path means
 * one traceback format. Node only does when pre-warmed; `node main.js` exits fast on its own.
 */
export function usesBootstrap(language: Language, warm: boolean): boolean {
  return warm || language === "python";
}

/**
 * Tells a bootstrapped interpreter that its code is in place; it starts at once or when loaded.
 * With it goes the program's end mark (`LaunchedProgram.endMark`), where the backend gave one; a
 * Python bootstrap can also take the program itself (`takesProgramWithGo`), which it writes to
 * main.py before it runs it.
 */
export function sendGo(
  program: { child: ChildProcess; endMark?: string; takesProgramWithGo?: boolean },
  code?: string,
): void {
  const control = program.child.stdio[3];
  if (!(control instanceof Socket)) return;
  control.on("error", () => undefined);
  if (code !== undefined && !takesProgramWithGo(program))
    throw new Error("this interpreter cannot take its program with the go");
  if (program.endMark === undefined) {
    control.end("g");
    return;
  }
  control.write(
    code === undefined
      ? `g${program.endMark}.`
      : `g${program.endMark}p${String(Buffer.byteLength(code)).padStart(10, "0")}${code}`,
  );
  // The Python bootstrap reads to the go's end, not the pipe's: the shutdown can wait for the next
  // turn of the loop, after the run's own setup (ending the stream costs ~0.06 ms of the host's).
  setImmediate(() => control.end());
}

/**
 * Whether the program can go with the go instead of onto the disk first: only to the Python
 * bootstrap, which alone reads a program after the mark. A pre-warmed run's host then
 * writes no main.py on its way (a few tenths of a millisecond); the bootstrap writes it.
 */
export function takesProgramWithGo(program: { endMark?: string; takesProgramWithGo?: boolean }): boolean {
  return program.endMark !== undefined && program.takesProgramWithGo === true;
}

let supportDir: string | undefined;

const judgeNodes = new Map<string, string>();

/**
 * The support dir's execute-only copy (mode 0111) of a Node executable, made on first need (about
 * 100 MB, once per process): its file name in the support dir.
 */
export function judgeNodeName(executable: string): string {
  const known = judgeNodes.get(executable);
  if (known) return known;
  const name = `selfheal-judge-node-${judgeNodes.size}`;
  const path = join(getSupportDir(), name);
  if (!existsSync(path)) {
    copyFileSync(executable, path);
    chmodSync(path, 0o111);
  }
  judgeNodes.set(executable, name);
  return name;
}

/**
 * What a run of `language` starts: for JavaScript the execute-only copy of its Node, as the program
 * sees the support dir, so the tests' process needs no second start to be out of the program's reach.
 */
export function runExecutable(language: Language, executable: string, visibleSupportDir: string): string {
  return language === "javascript" ? join(visibleSupportDir, judgeNodeName(executable)) : executable;
}

/** For a JavaScript run: where its judge finds the execute-only Node, as the program sees the support dir. */
export function judgeNodeEnv(
  language: Language,
  executable: string,
  visibleSupportDir: string,
): Record<string, string> {
  if (language !== "javascript") return {};
  return { [JUDGE_NODE_VARIABLE]: runExecutable(language, executable, visibleSupportDir) };
}

/**
 * A host directory, made once per process and removed at exit, holding files every run reads
 * but none may change: the Node bootstrap and, for bwrap, a minimal /etc.
 */
export function getSupportDir(): string {
  if (supportDir) return supportDir;
  const directory = mkdtempSync(tempDirPrefix("support"));
  // Readable by the unprivileged uid a bwrap run uses; nothing in it is secret.
  chmodSync(directory, 0o755);
  writeFileSync(join(directory, BOOTSTRAP_FILE_NAME), NODE_BOOTSTRAP, { mode: 0o444 });
  writeFileSync(join(directory, "selfheal-warmup.cjs"), "", { mode: 0o444 });
  writeFileSync(join(directory, FD_CLOSER_FILE_NAME), NODE_FD_CLOSER, { mode: 0o444 });
  writeFileSync(join(directory, NODE_PROGRAM_AHEAD_FILE_NAME), NODE_PROGRAM_AHEAD, { mode: 0o444 });
  process.once("exit", () => rmSync(directory, { recursive: true, force: true }));
  supportDir = directory;
  return directory;
}

/**
 * The Python bootstrap's lines that run main.py and report its end (a fresh `__main__`, argv,
 * SystemExit, the traceback without its own frame, `finish`): the benchmark's batch harness runs
 * each of its programs through them, so each starts and ends as a run alone does.
 */
export function pythonRunMainSource(): string {
  // From the shutdown that finish(status) ends with, which the bootstrap defines just before it.
  const shutdown = PYTHON_BOOTSTRAP.indexOf(PYTHON_OBSERVABLE_SHUTDOWN);
  const start = PYTHON_BOOTSTRAP.indexOf("\ndef finish(status):");
  const waitStart = PYTHON_BOOTSTRAP.indexOf(`\n${WAIT_FOR_GO_START}\n`);
  const waitEnd = PYTHON_BOOTSTRAP.indexOf(`\n${WAIT_FOR_GO_END}\n`);
  if (shutdown === -1 || start < shutdown || waitStart < start || waitEnd < waitStart)
    throw new Error(
      "the Python bootstrap no longer defines its shutdown and finish(status) before its wait for the go",
    );
  // Each program's main.py is on disk before it starts, and it has no end report.
  const fresh = "path, module = fresh_main()\nprogram_text = None\n";
  return `${PYTHON_BOOTSTRAP.slice(shutdown + 1, waitStart + 1)}${fresh}${PYTHON_BOOTSTRAP.slice(waitEnd + WAIT_FOR_GO_END.length + 2)}`;
}
