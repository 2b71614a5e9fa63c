import { execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { MIB } from "./limits.js";
import { CODE_FILE_NAME } from "./parse-error.js";
import { collectRun, killProcessGroup, unavailableResult } from "./run-child.js";
import type {
  InputFile,
  Language,
  RunHooks,
  RunRequest,
  RunResult,
  Sandbox,
  SandboxIsolation,
  SandboxLimits,
} from "./types.js";
import { safeRelativePath } from "./work-dir.js";

/** How long we give the engine to answer before calling it unreachable. */
const ENGINE_CHECK_TIMEOUT_MS = 5_000;
/** `docker run` and `podman run` exit with 125 when the engine itself failed, not the program. */
const ENGINE_FAILURE_EXIT_CODE = 125;

export type ContainerEngine = "docker" | "podman";

export interface ContainerOptions {
  command?: ContainerEngine;
  /** One image for both languages, or one per language. */
  image?: string | Partial<Record<Language, string>>;
}

export const DEFAULT_CONTAINER_IMAGES: Record<Language, string> = {
  python: "python:3.12-slim",
  javascript: "node:20-slim",
};

/** Where the program's stdin waits inside the container until the shell hands it over. */
const STDIN_FILE = ".selfheal-stdin";

export interface ContainerCommandInput {
  engine: ContainerEngine;
  image: string;
  language: Language;
  limits: SandboxLimits;
  /** Container name, so a timed-out run can be killed by name (killing the client leaves it running). */
  name: string;
}

/**
 * The `docker run` / `podman run` command line for one run. The code, extra files and stdin arrive
 * as a tar archive on the container's stdin, so nothing of the host is mounted.
 */
export function buildContainerCommand(input: ContainerCommandInput): string[] {
  const { limits } = input;
  const codeFile = CODE_FILE_NAME[input.language];
  const interpreter =
    input.language === "python"
      ? `python3 -I -u ${codeFile}`
      : `node --max-old-space-size=${limits.memoryMb} ${codeFile}`;
  // Unpack, hand the saved stdin to the program, and delete it so the program cannot find it.
  const script = `tar -x -C /work && exec 0< /work/${STDIN_FILE} && rm -f /work/${STDIN_FILE} && exec ${interpreter}`;
  return [
    input.engine,
    "run",
    "--rm",
    "-i",
    "--name",
    input.name,
    "--network",
    "none",
    "--memory",
    `${limits.memoryMb}m`,
    "--memory-swap",
    `${limits.memoryMb}m`,
    "--pids-limit",
    String(limits.maxProcesses),
    "--read-only",
    "--cap-drop",
    "ALL",
    "--security-opt",
    "no-new-privileges",
    "--user",
    "65534:65534",
    "--tmpfs",
    `/work:rw,nosuid,nodev,size=${4 * limits.maxFileMb}m,mode=1777`,
    "--tmpfs",
    `/tmp:rw,nosuid,nodev,size=${4 * limits.maxFileMb}m,mode=1777`,
    "--workdir",
    "/work",
    "--env",
    "HOME=/work",
    "--ulimit",
    `cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`,
    "--ulimit",
    `fsize=${limits.maxFileMb * MIB}:${limits.maxFileMb * MIB}`,
    "--ulimit",
    "nofile=256:256",
    "--label",
    "selfheal.sandbox=1",
    input.image,
    "sh",
    "-c",
    script,
  ];
}

/** Runs each program in a fresh container through the docker or podman CLI. */
export class ContainerSandbox implements Sandbox {
  readonly kind = "container" as const;
  private readonly engine: ContainerEngine;
  private engineReady = false;

  constructor(
    private readonly limits: SandboxLimits,
    private readonly options: ContainerOptions = {},
  ) {
    this.engine = options.command ?? "docker";
  }

  async run(request: RunRequest, hooks?: RunHooks): Promise<RunResult> {
    const startedAt = performance.now();
    const problem = await this.checkEngine();
    if (problem !== null) return unavailableResult(problem, startedAt);

    const name = `selfheal-${randomBytes(6).toString("hex")}`;
    const argv = buildContainerCommand({
      engine: this.engine,
      image: this.imageFor(request.language),
      language: request.language,
      limits: this.limits,
      name,
    });
    const files: Record<string, string> = {
      ...request.files,
      [CODE_FILE_NAME[request.language]]: request.code,
      [STDIN_FILE]: request.stdin ?? "",
    };
    const [file = "", ...args] = argv;
    // The engine CLI is ours, not the program's: it gets our environment (DOCKER_HOST and so on).
    const child = spawn(file, args, { detached: true, stdio: ["pipe", "pipe", "pipe"] });
    const killAll = (): void => {
      if (child.exitCode === null && child.signalCode === null) {
        const killer = spawn(this.engine, ["kill", name], { stdio: "ignore", detached: true });
        killer.on("error", () => undefined);
        killer.unref();
      }
      killProcessGroup(child);
    };
    const result = await collectRun(
      { child, killAll, exitCodeEncodesSignal: true },
      {
        language: request.language,
        stdin: encodeTar(files, request.inputs),
        timeoutMs: request.timeoutMs ?? this.limits.timeoutMs,
        maxOutputBytes: this.limits.maxOutputBytes,
        ...(hooks ? { hooks } : {}),
        startedAt,
      },
    );
    if (result.exitCode === ENGINE_FAILURE_EXIT_CODE) {
      this.engineReady = false;
      return { ...result, status: "unavailable", error: undefined };
    }
    return result;
  }

  /** What the flags of `buildContainerCommand` ask the engine for; this process measures none of it. */
  describe(): SandboxIsolation {
    const { memoryMb, maxProcesses, cpuSeconds, maxFileMb } = this.limits;
    return {
      kind: "container",
      memory: { scope: "run", by: `${this.engine} --memory ${memoryMb}m (the engine's cgroup)` },
      processes: { scope: "run", by: `${this.engine} --pids-limit ${maxProcesses}` },
      cpu: { scope: "process", by: `--ulimit cpu=${cpuSeconds} per process` },
      disk: { scope: "run", by: `tmpfs /work and /tmp of ${4 * maxFileMb} MiB each` },
      syscalls: { scope: "run", by: `the engine's default seccomp profile` },
      notes: ["as the engine promises for these flags; not probed"],
    };
  }

  /** Containers start per run; there is nothing to warm. (Pulling the images is up to the operator.) */
  async prewarm(): Promise<void> {}

  async close(): Promise<void> {}

  private imageFor(language: Language): string {
    const { image } = this.options;
    if (typeof image === "string") return image;
    return image?.[language] ?? DEFAULT_CONTAINER_IMAGES[language];
  }

  private async checkEngine(): Promise<string | null> {
    if (this.engineReady) return null;
    const problem = await probeContainerEngine(this.engine);
    this.engineReady = problem === null;
    return problem;
  }
}

/**
 * Asks the engine for its server version: null when it answers, else why not in the engine's own
 * words (the CLI talks to the daemon DOCKER_HOST / CONTAINER_HOST name, so a missing socket shows here).
 */
export function probeContainerEngine(engine: ContainerEngine): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(
      engine,
      ["version", "--format", "{{.Server.Version}}"],
      { timeout: ENGINE_CHECK_TIMEOUT_MS },
      (error, _stdout, stderr) => {
        if (!error) resolve(null);
        else if (error.code === "ENOENT") resolve(`${engine} is not installed (not found on PATH)`);
        else if (error.killed) resolve(`${engine} did not answer within ${ENGINE_CHECK_TIMEOUT_MS / 1000} s`);
        else resolve(stderr.trim() || error.message);
      },
    );
  });
}

/**
 * A minimal ustar archive of regular files; enough for `tar -x` in any image. The read-only files
 * (inputs, mode 0444) come first, so the code, written last, wins a clash as on the local backends.
 */
export function encodeTar(files: Record<string, string>, readOnly: readonly InputFile[] = []): Buffer {
  const blocks: Buffer[] = [];
  const entries = [
    ...readOnly.map((input) => ({ rawName: input.name, body: Buffer.from(input.content), mode: "0000444" })),
    ...Object.entries(files).map(([rawName, content]) => ({
      rawName,
      body: Buffer.from(content, "utf8"),
      mode: "0000644",
    })),
  ];
  for (const { rawName, body, mode } of entries) {
    const name = safeRelativePath(rawName);
    if (Buffer.byteLength(name) > 100) throw new Error(`file name too long for the container sandbox: ${name}`);
    const header = Buffer.alloc(512);
    header.write(name, 0, 100, "utf8");
    header.write(`${mode}\0`, 100, "ascii");
    header.write("0000000\0", 108, "ascii");
    header.write("0000000\0", 116, "ascii");
    header.write(`${body.length.toString(8).padStart(11, "0")}\0`, 124, "ascii");
    header.write(
      `${Math.floor(Date.now() / 1000)
        .toString(8)
        .padStart(11, "0")}\0`,
      136,
      "ascii",
    );
    header.write("        ", 148, "ascii");
    header.write("0", 156, "ascii");
    header.write("ustar\0", 257, "ascii");
    header.write("00", 263, "ascii");
    let checksum = 0;
    for (const byte of header) checksum += byte;
    header.write(`${checksum.toString(8).padStart(6, "0")}\0 `, 148, "ascii");
    blocks.push(header, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}
