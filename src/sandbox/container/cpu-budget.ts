import type { ChildProcess } from "node:child_process";

import { cgroupCpuReader } from "../host/cgroups.js";
import { isAlive, type RunWideLimits } from "../run/run-child.js";
import type { SandboxLimits } from "../types.js";
import type { ContainerEngine } from "./command.js";
import { engineIsLocal, inspectContainer } from "./engine.js";

/** How often the engine is asked for the container's init pid until it reports one. */
const PID_POLL_MS = 20;

/**
 * The CPU budget for the whole container, as bwrap's cgroup gives it: `collectRun` polls the
 * container's cgroup (found through its init's pid as soon as the engine reports one) and kills
 * the run past `cpuSeconds`. Memory stays the engine's: its OOM kill is read after the exit.
 * Undefined where the engine is not on this host, whose cgroups cannot be read from here.
 */
export function containerCpuBudget(
  engine: ContainerEngine,
  container: { child: ChildProcess; name: string },
  limits: SandboxLimits,
): RunWideLimits | undefined {
  if (!engineIsLocal(engine)) return undefined;
  let readNs: (() => number | null) | null = null;
  const running = (): boolean => isAlive(container.child);
  void (async () => {
    while (readNs === null && running()) {
      const [pid = 0, id = ""] =
        (await inspectContainer(engine, container.name, "{{.State.Pid}} {{.Id}}"))?.split(" ") ?? [];
      if (Number(pid) > 0) readNs = cgroupCpuReader(Number(pid), id) ?? (() => null);
      else await new Promise((resolve) => setTimeout(resolve, PID_POLL_MS));
    }
  })();
  const { memoryMb, cpuSeconds } = limits;
  return {
    memoryMb,
    cpuSeconds,
    memoryExceeded: () => false,
    // The container is fresh (or waited idle in `tar -x`): all it used is the run's.
    startCpuBudget: () => true,
    cpuSecondsUsed: () => (readNs?.() ?? 0) / 1e9,
  };
}
