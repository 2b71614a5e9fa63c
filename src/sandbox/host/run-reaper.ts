import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import type { Socket } from "node:net";
import { join } from "node:path";

import { ownIdentity } from "../../core/process.js";
import { findOnPath } from "./interpreters.js";
import { killTargets, OWNER_FILE, type RunKillTargets, recordLines } from "./run-records.js";
import { tempDirPrefix } from "./temp-dirs.js";

/**
 * The watchdog, one per process for every backend: a shell that blocks reading a pipe only its
 * owner (this process) holds open. The read returns at EOF, which the kernel delivers whenever the
 * owner dies, SIGKILL included; then it kills every run still recorded (process groups, cgroups,
 * and through the engine CLI a container sandbox's containers) and removes the record. It does not rely on a parent-death
 * signal: the kernel checks that one like kill(2), as sent by the dying parent, so a root parent
 * that dropped its capabilities cannot deliver it to a child running under another uid (the
 * escape this exists for; docs/security.md). The watchdog keeps our credentials, root's included.
 */
export const WATCHDOG_SCRIPT = `
dir=$1
while read -r _; do :; done
for run in "$dir"/run-*; do
  [ -f "$run" ] || continue
  while read -r kind target extra; do
    case $kind in
      group) kill -s KILL -- "-$target" 2>/dev/null ;;
      kill) echo 1 2>/dev/null > "$target" ;;
      procs) for _ in 1 2 3 4 5 6 7 8; do
          while read -r pid; do kill -s KILL "$pid" 2>/dev/null; done 2>/dev/null < "$target"
        done ;;
      containers) ids=$("$target" ps -aq --filter "label=$extra" 2>/dev/null)
        [ -n "$ids" ] && "$target" rm -f $ids >/dev/null 2>&1 ;;
    esac
  done < "$run"
done
rm -rf "$dir"
`;

interface Registry {
  dir: string;
  watchdog: ChildProcess | null;
  live: Map<string, RunKillTargets>;
}

let registry: Registry | undefined;
let runCounter = 0;

/**
 * Records a run so that it dies with this process however this process ends: at a normal exit here,
 * at SIGKILL by the watchdog, and if the watchdog died too, by the next selfheal process's start-up
 * sweep (`reapRecordedRuns`). Returns the function that forgets the run once it is over.
 */
export function trackRun(targets: RunKillTargets): () => void {
  const current = openRegistry();
  const name = `run-${++runCounter}`;
  const lines = recordLines(targets);
  try {
    writeFileSync(join(current.dir, name), `${lines.join("\n")}\n`, { mode: 0o600 });
  } catch {
    // The record is a second line of defence; the run's own kill still works without it.
  }
  current.live.set(name, targets);
  ensureWatchdog(current);
  return () => {
    if (!current.live.delete(name)) return;
    try {
      unlinkSync(join(current.dir, name));
    } catch {
      // Already swept.
    }
  };
}

function openRegistry(): Registry {
  if (registry) return registry;
  const dir = mkdtempSync(tempDirPrefix("runs"));
  const owner = ownIdentity();
  writeFileSync(join(dir, OWNER_FILE), `${owner.pid} ${owner.startTime ?? "-"}\n`, { mode: 0o600 });
  const created: Registry = { dir, watchdog: null, live: new Map() };
  process.once("exit", () => {
    // A normal exit (process.exit mid-run included) kills what is left itself, at once; containers
    // need the engine, which an exit handler cannot wait for: their records stay for the watchdog,
    // which reads them when this process's end closes its pipe.
    let leftToWatchdog = false;
    for (const [name, targets] of created.live) {
      killTargets(targets);
      if (targets.containers) leftToWatchdog = true;
      else rmSync(join(dir, name), { force: true });
    }
    created.live.clear();
    if (!leftToWatchdog) rmSync(dir, { recursive: true, force: true });
  });
  registry = created;
  return created;
}

function ensureWatchdog(current: Registry): void {
  const alive = current.watchdog && current.watchdog.exitCode === null && current.watchdog.signalCode === null;
  if (alive) return;
  const shell = findOnPath("sh") ?? "/bin/sh";
  const watchdog = spawn(shell, ["-c", WATCHDOG_SCRIPT, "selfheal-watchdog", current.dir], {
    // Its own session: a terminal's ^C or a kill of our process group does not reach it.
    detached: true,
    stdio: ["pipe", "ignore", "ignore"],
    cwd: "/",
    env: watchdogEnv(),
  });
  watchdog.on("error", () => undefined);
  watchdog.stdin?.on("error", () => undefined);
  // Neither the watchdog nor its pipe may keep a CLI or a test worker alive.
  watchdog.unref();
  (watchdog.stdin as Socket | null)?.unref();
  current.watchdog = watchdog;
}

/**
 * PATH, and what a container engine's CLI needs to find its daemon (docker's DOCKER_HOST and
 * config, podman's CONTAINER_HOST and rootless runtime dir), as our own engine calls see them.
 */
function watchdogEnv(): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin" };
  for (const [name, value] of Object.entries(process.env)) {
    const engine = /^(DOCKER|CONTAINER)_/.test(name) || name === "XDG_RUNTIME_DIR" || name === "HOME";
    if (engine && value !== undefined) env[name] = value;
  }
  return env;
}
