import { createSandbox, type Sandbox } from "../../src/index.js";
import { bwrapMissing, gvisorMissing } from "./capabilities.js";
import { containerEngineMissing, TEST_CONTAINER_IMAGE } from "./container-engine.js";

export type BackendKind = "process" | "bwrap" | "gvisor" | "container";

/** Why a backend's tests cannot run here, or null; .ci/run's require flags (test/helpers/capabilities.ts) turn it into a failure. */
export function backendMissing(kind: BackendKind): string | null {
  if (kind === "process") return null;
  if (kind === "container") return containerEngineMissing();
  return kind === "bwrap" ? bwrapMissing() : gvisorMissing();
}

/** Every backend, each made the way its tests run it. */
export const BACKENDS: Array<{ kind: BackendKind; make: () => Sandbox }> = [
  { kind: "process", make: () => createSandbox({ kind: "process" }) },
  { kind: "bwrap", make: () => createSandbox({ kind: "bwrap" }) },
  { kind: "gvisor", make: () => createSandbox({ kind: "gvisor" }) },
  { kind: "container", make: () => createSandbox({ kind: "container", container: { image: TEST_CONTAINER_IMAGE } }) },
];
