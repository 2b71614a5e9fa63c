import { ARTIFACTS_FOLDER } from "../../core/data-files.js";
import { JUDGE_NODE_VARIABLE } from "../host/bootstrap.js";
import { MAX_DISK_FILES, MAX_OPEN_FILES, MIB } from "../limits.js";
import { CODE_FILE_NAME } from "../parse-error.js";
import { EGRESS_MOUNT, PYTHON_EGRESS_RELAY_FILE } from "../run/egress.js";
import type { Language, SandboxLimits } from "../types.js";

/** Where scripts/build-container-image.sh puts the JavaScript judge's execute-only Node in the image. */
export const CONTAINER_JUDGE_NODE = "/usr/local/lib/selfheal-judge-node";

/** The label every container of ours carries; `docker ps -a --filter label=selfheal.sandbox` finds them. */
export const CONTAINER_LABEL = "selfheal.sandbox";
/** The label naming the sandbox instance that owns a container, by which the watchdog removes it. */
export const OWNER_LABEL = "selfheal.owner";
/** Replaces the default images, for both languages, when the caller names none (CLI and graphs). */
export const CONTAINER_IMAGE_ENV = "SELFHEAL_CONTAINER_IMAGE";

export type ContainerEngine = "docker" | "podman";

export interface ContainerOptions {
  command?: ContainerEngine;
  /** One image for both languages, or one per language. Default: $SELFHEAL_CONTAINER_IMAGE, else the official images. */
  image?: string | Partial<Record<Language, string>>;
  /**
   * `selfheal` (default): the deny-list the bwrap backend uses (seccomp.ts) replaces the engine's
   * default profile, which in Docker 20.10 allows ptrace and io_uring. `engine`: keep the engine's own.
   */
  seccomp?: "selfheal" | "engine";
}

/** For registries: the official images. Offline, scripts/build-container-image.sh builds one for both. */
export const DEFAULT_CONTAINER_IMAGES: Record<Language, string> = {
  python: "python:3.12-slim",
  javascript: "node:20-slim",
};

/** The image a run in `language` starts from: the option's, else $SELFHEAL_CONTAINER_IMAGE, else the official one. */
export function containerImageFor(
  image: ContainerOptions["image"],
  language: Language,
  env: NodeJS.ProcessEnv = process.env,
): string {
  if (typeof image === "string") return image;
  return image?.[language] ?? (env[CONTAINER_IMAGE_ENV] || DEFAULT_CONTAINER_IMAGES[language]);
}

/** Where the program's stdin waits inside the container until the shell hands it over. */
export const STDIN_FILE = ".selfheal-stdin";

export interface ContainerCommandInput {
  engine: ContainerEngine;
  image: string;
  language: Language;
  limits: SandboxLimits;
  /** Container name, so a timed-out run can be removed by name (killing the client leaves it running). */
  name: string;
  /** The owning sandbox's token, for the process's watchdog (see host/run-reaper.ts). */
  owner: string;
  /** The seccomp profile file to use instead of the engine's default; null keeps the engine's. */
  seccompProfile: string | null;
  /** Host dir (on a tmpfs of its own) bound at /work/out, from which the artifacts are collected; null for none. */
  artifactsFolder?: string | null;
  /**
   * The run's egress proxy: its folder (socket, Node preload, Python relay) bound read-only at
   * EGRESS_MOUNT, the only way out of `--network none`, and the variables that point the program at it.
   */
  egress?: { dir: string; env: Record<string, string> };
}

/**
 * The `docker run` / `podman run` command line for one run. The code, extra files and stdin arrive
 * as a tar archive on the container's stdin, so nothing of the host is mounted. No `--rm`: the
 * container must outlive its program so that `inspect` can tell whether the kernel OOM-killed any of
 * its processes; the backend removes it then.
 */
export function buildContainerCommand(input: ContainerCommandInput): string[] {
  const { limits } = input;
  const codeFile = CODE_FILE_NAME[input.language];
  const interpreter =
    input.language === "python"
      ? `python3 -I -u ${codeFile}`
      : `node --max-old-space-size=${limits.memoryMb} ${codeFile}`;
  // `cd` rather than `--workdir /work`: with --workdir, Docker creates /work in the image before the
  // tmpfs is mounted there, and the tmpfs comes up root-owned 0755, unwritable for --user 65534
  // (moby/moby#39466). Unpack, hand the saved stdin to the program, and delete it so it cannot find it.
  const share = diskShare(limits, Boolean(input.artifactsFolder));
  const tmpfsOptions = `rw,nosuid,nodev,size=${share.mb}m,nr_inodes=${share.inodes},mode=1777`;
  // A Python run starts without our bootstrap here: the relay to the proxy starts first, and returns once it listens.
  const relay =
    input.egress && input.language === "python" ? `python3 -I ${EGRESS_MOUNT}/${PYTHON_EGRESS_RELAY_FILE} && ` : "";
  const script = `cd /work && tar -x && exec 0< ${STDIN_FILE} && rm -f ${STDIN_FILE} && ${relay}exec ${interpreter}`;
  return [
    input.engine,
    "run",
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
    ...(input.seccompProfile === null ? [] : ["--security-opt", `seccomp=${input.seccompProfile}`]),
    "--user",
    "65534:65534",
    "--tmpfs",
    `/work:${tmpfsOptions}`,
    "--tmpfs",
    `/tmp:${tmpfsOptions}`,
    ...(input.artifactsFolder
      ? ["--mount", `type=bind,src=${input.artifactsFolder},dst=/work/${ARTIFACTS_FOLDER}`]
      : []),
    ...(input.egress ? ["--mount", `type=bind,src=${input.egress.dir},dst=${EGRESS_MOUNT},readonly`] : []),
    ...Object.entries(input.egress?.env ?? {}).flatMap(([name, value]) => ["--env", `${name}=${value}`]),
    "--env",
    "HOME=/work",
    // Where the image has it (scripts/build-container-image.sh), the JavaScript judge's Node.
    "--env",
    `${JUDGE_NODE_VARIABLE}=${CONTAINER_JUDGE_NODE}`,
    "--ulimit",
    `cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`,
    "--ulimit",
    `fsize=${limits.maxFileMb * MIB}:${limits.maxFileMb * MIB}`,
    "--ulimit",
    `nofile=${MAX_OPEN_FILES}:${MAX_OPEN_FILES}`,
    "--label",
    `${CONTAINER_LABEL}=1`,
    "--label",
    `${OWNER_LABEL}=${input.owner}`,
    input.image,
    "sh",
    "-c",
    script,
  ];
}

/**
 * /work and /tmp are two tmpfs mounts (an engine mounts no tmpfs twice), and out/, where it is
 * collected, a host tmpfs of a third: each gets an equal share of the disk budget and its inodes.
 */
export function diskShare(limits: SandboxLimits, withArtifacts: boolean): { mb: number; inodes: number } {
  const parts = withArtifacts ? 3 : 2;
  return { mb: Math.max(1, Math.floor(limits.maxDiskMb / parts)), inodes: Math.floor(MAX_DISK_FILES / parts) };
}
