import { describe, it } from "vitest";

import { CONTAINER_IMAGE_ENV } from "../src/sandbox/container-backend.js";
import { createSandbox } from "../src/sandbox/index.js";
import { containerEngineMissing, TEST_CONTAINER_IMAGE } from "./container-engine.js";
import { describeHostileSuite, isolationGaps } from "./hostile-suite.js";

const MAX_PROCESSES = 32;
const limits = { maxProcesses: MAX_PROCESSES, memoryMb: 256, cpuSeconds: 2 };
const container = { image: TEST_CONTAINER_IMAGE };

// .ci/run starts dockerd and builds the image, so CI always runs this suite; elsewhere it may skip.
const missing = containerEngineMissing();
// The owner-killed cases start their sandbox in a child process, which finds the image here.
process.env[CONTAINER_IMAGE_ENV] ??= TEST_CONTAINER_IMAGE;

if (missing !== null) {
  describe.skip(`hostile code against the container backend: skipped, ${missing}`, () => {
    it("contains every hostile case", () => undefined);
  });
} else {
  describeHostileSuite("hostile code against the container backend (docker)", {
    kind: "container",
    createSandbox: () => createSandbox({ kind: "container", limits, container }),
    maxProcesses: MAX_PROCESSES,
    memoryMb: limits.memoryMb,
    cpuSeconds: limits.cpuSeconds,
    // Only what describe() admits; with the engine on this host it admits nothing.
    uncontained: isolationGaps(createSandbox({ kind: "container", limits, container, prewarm: false }).describe()),
  });
}
