import { createSandbox, type Sandbox } from "../src/index.js";
import { probeBwrap, probeGvisor } from "../src/sandbox/index.js";
import { containerEngineMissing, TEST_CONTAINER_IMAGE } from "./container-engine.js";

export type BackendKind = "process" | "bwrap" | "gvisor" | "container";

/**
 * Why a backend's tests cannot run here, or null when they can. Under SELFHEAL_TEST_REQUIRE_<KIND>=1
 * (and SELFHEAL_TEST_REQUIRE_DOCKER=1 for the container) a missing backend fails instead.
 */
export function backendMissing(kind: BackendKind): string | null {
  if (kind === "process") return null;
  if (kind === "container") return containerEngineMissing();
  const missing = kind === "bwrap" ? (probeBwrap().usable ? null : "bubblewrap cannot run here") : probeGvisor();
  const flag = `SELFHEAL_TEST_REQUIRE_${kind.toUpperCase()}`;
  if (missing !== null && process.env[flag] === "1") throw new Error(`${flag}=1 but ${missing}`);
  return missing;
}

/** Every backend, each made the way its tests run it. */
export const BACKENDS: Array<{ kind: BackendKind; make: () => Sandbox }> = [
  { kind: "process", make: () => createSandbox({ kind: "process" }) },
  { kind: "bwrap", make: () => createSandbox({ kind: "bwrap" }) },
  { kind: "gvisor", make: () => createSandbox({ kind: "gvisor" }) },
  { kind: "container", make: () => createSandbox({ kind: "container", container: { image: TEST_CONTAINER_IMAGE } }) },
];
