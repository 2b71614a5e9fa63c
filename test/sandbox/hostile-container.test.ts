import { describe, it } from "vitest";

import { CONTAINER_IMAGE_ENV } from "../../src/sandbox/container/command.js";
import { createSandbox } from "../../src/sandbox/index.js";
import { containerEngineMissing, TEST_CONTAINER_IMAGE } from "../helpers/container-engine.js";
import { describeOurHostileSuite, type ExpectedEscapes } from "../helpers/hostile-suite.js";

const limits = { maxProcesses: 32, memoryMb: 256, cpuSeconds: 2 };
const container = { image: TEST_CONTAINER_IMAGE };

/**
 * With the engine on this machine (a unix socket, as .ci/run starts dockerd) the container
 * contains every case. A remote engine's cgroups cannot be read from here, so the CPU budget of
 * the whole run cannot be watched: DOCKER_HOST is the documented switch between the two.
 */
const REMOTE_ENGINE: ExpectedEscapes = {
  "CPU spread over forked processes": "the engine is not on this host: --ulimit cpu holds per process only",
};
const engineIsRemote = !!process.env.DOCKER_HOST && !process.env.DOCKER_HOST.startsWith("unix://");

// .ci/run starts dockerd, builds the image and requires docker, so CI always runs this suite.
const missing = containerEngineMissing();
// The owner-killed cases start their sandbox in a child process, which finds the image here.
process.env[CONTAINER_IMAGE_ENV] ??= TEST_CONTAINER_IMAGE;

if (missing !== null) {
  describe.skip(`hostile code: the container backend: skipped, ${missing}`, () => {
    it("contains every hostile case", () => undefined);
  });
} else {
  describeOurHostileSuite("the container backend (docker)", {
    kind: "container",
    createSandbox: () => createSandbox({ kind: "container", limits, container }),
    limits,
    uncontained: engineIsRemote ? REMOTE_ENGINE : {},
  });
}
