import { spawn } from "node:child_process";
import { symlinkSync } from "node:fs";
import { join } from "node:path";

import {
  getSupportDir,
  inheritedFdsEnv,
  judgeNodeEnv,
  runExecutable,
  sendGo,
  usesBootstrap,
} from "../host/bootstrap.js";
import { interpreterCommand, type WarmStart } from "../host/command.js";
import { findOnPath, InterpreterMissingError, type Interpreters, resolveInterpreters } from "../host/interpreters.js";
import { trackRun } from "../host/run-reaper.js";
import { WorkDir } from "../host/work-dir.js";
import type { RunEgress } from "../run/egress.js";
import { endMarkFor } from "../run/end-report.js";
import type { Launcher, Reservation } from "../run/local-sandbox.js";
import { killProcessGroup, type LaunchedProgram } from "../run/run-child.js";
import type { Language, SandboxIsolation, SandboxLimits } from "../types.js";

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

/**
 * PATH and the locale from the parent; nothing else, so no API key or token reaches the code.
 * HOME and the temp dir are the run's own dir, removed after the run: whatever the program (or a
 * library calling tempfile/os.tmpdir()) leaves there is gone before the next run starts.
 */
export function scrubbedEnv(home: string, path: string | undefined = process.env.PATH): Record<string, string> {
  const env: Record<string, string> = {
    HOME: home,
    PATH: path ?? "/usr/local/bin:/usr/bin:/bin",
    TMPDIR: home,
    TMP: home,
    TEMP: home,
  };
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && (name === "LANG" || name === "LANGUAGE" || name.startsWith("LC_"))) env[name] = value;
  }
  return env;
}

/** Runs code as a plain child process in its own process group, with the rlimits the OS allows. */
export class ProcessLauncher implements Launcher {
  readonly kind = "process" as const;
  // The program shares the host's network: the proxy is one more port of 127.0.0.1 it may use.
  readonly egress = { via: "tcp", enforced: false, supportDir: getSupportDir() } as const;
  private readonly prlimit = findOnPath("prlimit");

  constructor(private readonly limits: SandboxLimits) {}

  describe(): SandboxIsolation {
    const { memoryMb, cpuSeconds, maxFileMb } = this.limits;
    return {
      kind: "process",
      memory: { scope: "process", by: `RLIMIT_AS ${memoryMb} MiB per process` },
      processes: { scope: "none", by: "no per-run cap: RLIMIT_NPROC would count every process of the user" },
      cpu: { scope: "process", by: `RLIMIT_CPU ${cpuSeconds} s per process` },
      disk: { scope: "process", by: `RLIMIT_FSIZE ${maxFileMb} MiB per file, anywhere the user may write` },
      syscalls: { scope: "none", by: "none: the code runs as the calling user" },
      notes: [
        "the process backend is not isolation",
        "installed packages are not read-only here: Python reads them from the cache, Node through a node_modules symlink in the work dir",
        "allowHosts cannot be enforced here: the proxy is in the program's environment, but the program shares the host's network and may connect anywhere",
      ],
      start: {
        forked: [],
        by: "each run starts its own interpreter (a pool keeps one started ahead): the fork server is bwrap's, whose namespaces keep one forked run from the next; here nothing would",
      },
    };
  }

  async reserve(python?: string, limits: SandboxLimits = this.limits): Promise<Reservation> {
    const [interpreters, workDir] = await Promise.all([resolveInterpreters(python), WorkDir.create()]);
    let released = false;
    const forgetRuns: (() => void)[] = [];
    return {
      workDir,
      spawn: (language, warm, packagesDir, egress) => {
        const program = this.spawn(interpreters, workDir, limits, language, { warm, packagesDir, egress });
        forgetRuns.push(trackRun({ processGroup: program.child.pid }));
        return program;
      },
      release: async () => {
        if (released) return;
        released = true;
        await workDir.remove();
        for (const forget of forgetRuns.splice(0)) forget();
      },
    };
  }

  private spawn(
    interpreters: Interpreters,
    workDir: WorkDir,
    limits: SandboxLimits,
    language: Language,
    {
      warm,
      packagesDir,
      egress,
    }: { warm: WarmStart; packagesDir?: string | undefined; egress?: RunEgress | undefined },
  ): LaunchedProgram {
    const interpreter = interpreters[language];
    if (!interpreter) throw new InterpreterMissingError(language);
    // Node looks for node_modules from the program's own dir upwards, for require and import alike;
    // nothing here is read-only: the process backend is not isolation.
    if (packagesDir && language === "javascript") {
      symlinkSync(join(packagesDir, "node_modules"), join(workDir.path, "node_modules"));
    }
    const argv = interpreterCommand({
      language,
      executable: runExecutable(language, interpreter.executable, getSupportDir()),
      limits,
      warm,
      supportDir: getSupportDir(),
      prlimit: this.prlimit,
      pythonPackagesDir: language === "python" ? packagesDir : null,
    });
    const [file = "", ...args] = argv;
    const control = usesBootstrap(language, warm !== false);
    const child = spawn(file, args, {
      cwd: workDir.path,
      env: {
        ...scrubbedEnv(workDir.path),
        ...inheritedFdsEnv(language, control ? [0, 1, 2, 3] : [0, 1, 2]),
        ...judgeNodeEnv(language, interpreter.executable, getSupportDir()),
        ...egress?.env,
      },
      // Its own process group, so one kill reaches every child it forks (unless it calls setsid).
      detached: true,
      stdio: ["pipe", "pipe", "pipe", control ? "pipe" : "ignore"],
    });
    const endMark = endMarkFor(language, control);
    if (!warm) sendGo({ child, ...endMark });
    const killAll = (): void => killProcessGroup(child);
    return { child, killAll, ...endMark };
  }
}
