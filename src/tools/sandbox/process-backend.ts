import { spawn } from "node:child_process";
import { join } from "node:path";

import { BOOTSTRAP_FILE_NAME, PYTHON_BOOTSTRAP, getSupportDir } from "./bootstrap.js";
import { resolveInterpreters, findOnPath, type Interpreters } from "./interpreters.js";
import { MAX_OPEN_FILES } from "./limits.js";
import type { Launcher, Reservation } from "./local-sandbox.js";
import type { LaunchedProgram } from "./run-child.js";
import type { Language, SandboxLimits } from "./types.js";
import { WorkDir } from "./work-dir.js";

const MIB = 1024 * 1024;

let warnedNotIsolated = false;

/** Printed once per process: the plain process backend limits resources but hides nothing. */
export function warnProcessBackendOnce(): void {
  if (warnedNotIsolated) return;
  warnedNotIsolated = true;
  process.emitWarning(
    "selfheal is running generated code with the 'process' sandbox, which is NOT isolation: the code can read " +
      "your files and use the network. Install bubblewrap (apt-get install bubblewrap) or use the container sandbox.",
    { type: "SelfhealSandboxWarning", code: "SELFHEAL_PROCESS_SANDBOX" },
  );
}

/** The interpreter command line for a run, before any wrapper; `warm` starts the bootstrap instead of main. */
export function interpreterArgs(
  language: Language,
  executable: string,
  limits: SandboxLimits,
  warm: boolean,
  bootstrapDir: string,
): string[] {
  if (language === "python") {
    // -u: unbuffered, so output reaches `onOutput` while the program runs and a flood is seen early.
    return warm ? [executable, "-I", "-u", "-c", PYTHON_BOOTSTRAP] : [executable, "-I", "-u", "main.py"];
  }
  // V8 reserves far more address space than it uses, so Node gets a heap cap instead of RLIMIT_AS.
  const heapFlag = `--max-old-space-size=${limits.memoryMb}`;
  return warm ? [executable, heapFlag, join(bootstrapDir, BOOTSTRAP_FILE_NAME)] : [executable, heapFlag, "main.js"];
}

/**
 * `prlimit` arguments for a run. RLIMIT_NPROC is left out on purpose for this backend: it counts
 * every process of the user (a developer's whole desktop), and root ignores it anyway.
 */
export function prlimitArgs(language: Language, limits: SandboxLimits, options: { maxProcesses?: boolean } = {}): string[] {
  const args = [
    `--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`,
    `--fsize=${limits.maxFileMb * MIB}`,
    `--nofile=${MAX_OPEN_FILES}`,
    // A core dump of a crashed program would be written into the work dir for nothing.
    "--core=0",
  ];
  if (language === "python") args.push(`--as=${limits.memoryMb * MIB}`);
  if (options.maxProcesses) args.push(`--nproc=${limits.maxProcesses}`);
  return args;
}

/** PATH and the locale from the parent; nothing else, so no API key or token reaches the code. */
export function scrubbedEnv(home: string, path: string | undefined = process.env.PATH): Record<string, string> {
  const env: Record<string, string> = { HOME: home, PATH: path ?? "/usr/local/bin:/usr/bin:/bin" };
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && (name === "LANG" || name === "LANGUAGE" || name.startsWith("LC_"))) env[name] = value;
  }
  return env;
}

/** Runs code as a plain child process in its own process group, with rlimits where `prlimit` exists. */
export class ProcessLauncher implements Launcher {
  readonly kind = "process" as const;
  private readonly prlimit = findOnPath("prlimit");

  constructor(private readonly limits: SandboxLimits) {}

  async reserve(): Promise<Reservation> {
    const [interpreters, workDir] = await Promise.all([resolveInterpreters(), WorkDir.create()]);
    let released = false;
    return {
      workDir,
      spawn: (language, warm) => this.spawn(interpreters, workDir, language, warm),
      release: async () => {
        if (released) return;
        released = true;
        await workDir.remove();
      },
    };
  }

  private spawn(interpreters: Interpreters, workDir: WorkDir, language: Language, warm: boolean): LaunchedProgram {
    const interpreter = interpreters[language];
    const command = interpreter
      ? interpreterArgs(language, interpreter.executable, this.limits, warm, getSupportDir())
      : [language === "python" ? "python3" : "node"];
    const argv = this.prlimit ? [this.prlimit, ...prlimitArgs(language, this.limits), "--", ...command] : command;
    const [file = "", ...args] = argv;
    const child = spawn(file, args, {
      cwd: workDir.path,
      env: scrubbedEnv(workDir.path),
      // Its own process group, so one kill reaches every child it forks (unless it calls setsid).
      detached: true,
      stdio: ["pipe", "pipe", "pipe", warm ? "pipe" : "ignore"],
    });
    const killAll = (): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // The group is already gone.
      }
    };
    return { child, killAll };
  }
}
