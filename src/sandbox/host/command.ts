import { join } from "node:path";
import { MAX_OPEN_FILES, MIB } from "../limits.js";
import type { Language, SandboxLimits } from "../types.js";
import {
  BOOTSTRAP_FILE_NAME,
  FD_CLOSER_FILE_NAME,
  NODE_AHEAD_ARGUMENT,
  PYTHON_BOOTSTRAP,
  PYTHON_JUDGE_SUPPORT_FILE,
} from "./bootstrap.js";

/** Node 20 does not start below ~1 GiB of address space even with a tiny heap. */
const NODE_ADDRESS_SPACE_SLACK_MB = 1024;
const WASM_TRAP_HANDLER_FLAG = "--disable-wasm-trap-handler";

/** One rlimit, by its prlimit(1) name. */
export interface ResourceLimit {
  name: "cpu" | "fsize" | "nofile" | "core" | "as" | "nproc";
  soft: number;
  hard: number;
}

/**
 * The rlimits of a run. RLIMIT_NPROC only when asked: outside a user namespace it counts every
 * process of the user (a developer's whole desktop), and root ignores it anyway.
 */
export function resourceLimits(
  language: Language,
  limits: SandboxLimits,
  options: { maxProcesses?: boolean } = {},
): ResourceLimit[] {
  const fileBytes = limits.maxFileMb * MIB;
  // V8 reserves address space it never touches, so Node gets `memoryMb` of heap (its own flag) and
  // this much more address space for everything else: buffers, code, thread stacks. Without a cap
  // there, `Buffer.alloc` in a loop would eat the host's memory.
  const addressSpace = (limits.memoryMb + (language === "javascript" ? NODE_ADDRESS_SPACE_SLACK_MB : 0)) * MIB;
  const result: ResourceLimit[] = [
    // SIGXCPU at the soft limit, SIGKILL a second later if the program catches that.
    { name: "cpu", soft: limits.cpuSeconds, hard: limits.cpuSeconds + 1 },
    { name: "fsize", soft: fileBytes, hard: fileBytes },
    { name: "nofile", soft: MAX_OPEN_FILES, hard: MAX_OPEN_FILES },
    // A core dump of a crashed program would be written into the work dir for nothing.
    { name: "core", soft: 0, hard: 0 },
    { name: "as", soft: addressSpace, hard: addressSpace },
  ];
  if (options.maxProcesses) result.push({ name: "nproc", soft: limits.maxProcesses, hard: limits.maxProcesses });
  return result;
}

/**
 * Node's flags for a run's limits: its heap is `memoryMb`. V8 reserves ~10 GiB of address space per
 * WebAssembly memory for its bounds-check trap handler, which RLIMIT_AS refuses: without the second
 * flag, undici's HTTP parser (fetch's, loaded with it) fails to start and kills the program. Node
 * 20.15 and later know it; the check is the running Node's, which is the sandbox's unless another
 * node comes first on PATH.
 */
export function nodeLimitFlags(limits: Pick<SandboxLimits, "memoryMb">): string[] {
  const wasm = process.allowedNodeEnvironmentFlags.has(WASM_TRAP_HANDLER_FLAG) ? [WASM_TRAP_HANDLER_FLAG] : [];
  return [`--max-old-space-size=${limits.memoryMb}`, ...wasm];
}

export function prlimitArgs(resources: ResourceLimit[]): string[] {
  return resources.map(({ name, soft, hard }) => `--${name}=${soft}:${hard}`);
}

/**
 * How an interpreter starts: `false` runs main.py at once; `"warm"` starts the bootstrap and waits
 * for "g" on fd 3 (see bootstrap.ts); `"judged"` waits too, with the program's process of a run
 * judged in its own process made ahead: forked by a Python one (python-judge.ts, `_fork_ahead`),
 * started by a Node one (bootstrap.ts, `NODE_AHEAD_ARGUMENT`). `"judged-busy"` is that for a run
 * expected back to back, started while one executes: a Python one then leaves the pages its two
 * processes share to be copied as they are written, not all ahead, which would take the CPU from
 * the run executing then (the agent's loop with an instant model: 20 ms of sandbox time an attempt).
 */
export type WarmStart = false | "warm" | "judged" | "judged-busy";

export interface InterpreterCommandInput {
  language: Language;
  executable: string;
  limits: SandboxLimits;
  warm: WarmStart;
  /** Where the support dir (Node's bootstrap and preload) is, as the program sees it. */
  supportDir: string;
  /** prlimit(1), for Node; null where there is none (limits then go unset for Node). */
  prlimit: string | null;
  maxProcesses?: boolean;
  /** Python only: a dir of installed packages, as the program sees it, appended to sys.path. */
  pythonPackagesDir?: string | null;
}

/**
 * The command that starts the interpreter with its limits. Python sets its own rlimits in the
 * bootstrap (one exec fewer, and it works where prlimit does not, such as macOS); Node cannot, so
 * it starts under prlimit.
 */
export function interpreterCommand(input: InterpreterCommandInput): string[] {
  const resources = resourceLimits(input.language, input.limits, { maxProcesses: input.maxProcesses ?? false });
  if (input.language === "python") {
    // -u: unbuffered, so output reaches `onOutput` while the program runs and a flood is seen early.
    return [input.executable, "-I", "-u", "-c", PYTHON_BOOTSTRAP, ...pythonBootstrapSettings(input)];
  }
  const script = input.warm ? join(input.supportDir, BOOTSTRAP_FILE_NAME) : "main.js";
  // The preload closes inherited descriptors before the program (or the bootstrap) runs.
  const node = [
    input.executable,
    ...nodeLimitFlags(input.limits),
    "--require",
    join(input.supportDir, FD_CLOSER_FILE_NAME),
    script,
    ...(input.warm === "judged" || input.warm === "judged-busy" ? [NODE_AHEAD_ARGUMENT] : []),
  ];
  return input.prlimit ? [input.prlimit, ...prlimitArgs(resources), "--", ...node] : node;
}

/**
 * The Python bootstrap's arguments: its rlimits ("as=536870912:536870912" and so on), the packages'
 * folder, and for a warm interpreter the judge it compiles ahead. A forked run (src/sandbox/fork)
 * gets the same, as the bootstrap's argv.
 */
export function pythonBootstrapSettings(
  input: Pick<InterpreterCommandInput, "limits" | "warm" | "supportDir" | "maxProcesses" | "pythonPackagesDir"> & {
    /** The judge is compiled already: a fork server did it once, before it forked this process. */
    judgeCompiled?: boolean;
  },
): string[] {
  const resources = resourceLimits("python", input.limits, { maxProcesses: input.maxProcesses ?? false });
  const settings = resources.map(({ name, soft, hard }) => `${name}=${soft}:${hard}`);
  if (input.pythonPackagesDir) settings.push(`path=${input.pythonPackagesDir}`);
  // A warm interpreter compiles the tests' judge while it waits; a cold one would do it on the clock.
  if (input.warm && !input.judgeCompiled) settings.push(`judge=${join(input.supportDir, PYTHON_JUDGE_SUPPORT_FILE)}`);
  if (input.warm === "judged") settings.push("ahead");
  if (input.warm === "judged-busy") settings.push("ahead=busy");
  return settings;
}
