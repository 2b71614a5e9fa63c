import { execFileSync } from "node:child_process";

import { CONTAINER_IMAGE_ENV, CONTAINER_LABEL, OWNER_LABEL } from "../../src/sandbox/container/command.js";
import { findOnPath } from "../../src/sandbox/host/interpreters.js";
import { skipReason } from "./capabilities.js";

/** The image the container tests run: the one scripts/build-container-image.sh builds, which .ci/run calls. */
export const TEST_CONTAINER_IMAGE = process.env[CONTAINER_IMAGE_ENV] || "selfheal-sandbox:bookworm";

/**
 * Why the real-engine tests cannot run here, or null when they can: docker answers and has the image.
 * .ci/run starts dockerd, builds the image and sets SELFHEAL_TEST_REQUIRE_DOCKER=1, under which a
 * missing engine fails the test file instead of skipping it.
 */
export function containerEngineMissing(): string | null {
  return skipReason("docker", whyNoContainerEngine());
}

function whyNoContainerEngine(): string | null {
  if (!findOnPath("docker")) return "docker is not installed";
  try {
    execFileSync("docker", ["version", "--format", "{{.Server.Version}}"], { stdio: "ignore", timeout: 5_000 });
  } catch {
    return "the docker daemon does not answer";
  }
  try {
    execFileSync("docker", ["image", "inspect", TEST_CONTAINER_IMAGE], { stdio: "ignore", timeout: 5_000 });
  } catch {
    return `no image ${TEST_CONTAINER_IMAGE} (scripts/build-container-image.sh builds it)`;
  }
  return null;
}

/** The owner token (`<pid>-<random>`) of each selfheal container the engine still has: running, or also stopped. */
export function selfhealContainerOwners(which: "running" | "all" = "all"): string[] {
  const format = `{{.Label "${OWNER_LABEL}"}}`;
  return execFileSync(
    "docker",
    ["ps", ...(which === "all" ? ["-a"] : []), "--filter", `label=${CONTAINER_LABEL}`, "--format", format],
    {
      encoding: "utf8",
      timeout: 10_000,
    },
  )
    .split("\n")
    .filter(Boolean);
}

/** Those of them that a sandbox in process `pid` made. */
export function containersOwnedBy(pid: number, which: "running" | "all" = "all"): string[] {
  return selfhealContainerOwners(which).filter((owner) => owner.startsWith(`${pid}-`));
}
