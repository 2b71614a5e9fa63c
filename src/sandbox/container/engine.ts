import { execFile } from "node:child_process";

import type { ContainerEngine } from "./command.js";

/** How long we give the engine to answer before calling it unreachable. */
const ENGINE_CHECK_TIMEOUT_MS = 5_000;

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

/** Whether the engine has `image` here already (a run would otherwise pull it, or fail offline). */
export function imagePresent(engine: ContainerEngine, image: string): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(engine, ["image", "inspect", image], { timeout: ENGINE_CHECK_TIMEOUT_MS }, (error) => resolve(!error));
  });
}

/** The container's `inspect --format template`; null when the engine cannot say. */
export function inspectContainer(engine: ContainerEngine, name: string, template: string): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(engine, ["inspect", "--format", template, name], { timeout: ENGINE_CHECK_TIMEOUT_MS }, (error, stdout) =>
      resolve(error ? null : stdout.trim()),
    );
  });
}

/** `rm -f` kills and removes at once; resolves when the engine has answered (or given up). */
export function removeContainers(engine: ContainerEngine, names: string[]): Promise<void> {
  return new Promise<void>((resolve) => {
    execFile(engine, ["rm", "-f", ...names], { timeout: 30_000 }, () => resolve());
  });
}

/** The ids of every container carrying `label` (`name=value`), running or not; none when the engine cannot say. */
export function containersLabelled(engine: ContainerEngine, label: string): Promise<string[]> {
  return new Promise((resolve) => {
    execFile(
      engine,
      ["ps", "-aq", "--filter", `label=${label}`],
      { timeout: ENGINE_CHECK_TIMEOUT_MS },
      (error, stdout) => resolve(error ? [] : stdout.split(/\s+/).filter(Boolean)),
    );
  });
}

/** Whether the engine's containers live on this machine, so their cgroups can be read here. */
export function engineIsLocal(engine: ContainerEngine): boolean {
  const host = engine === "docker" ? process.env.DOCKER_HOST : process.env.CONTAINER_HOST;
  return process.platform === "linux" && (!host || host.startsWith("unix://"));
}
