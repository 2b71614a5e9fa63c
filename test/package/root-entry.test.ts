import { describe, expect, it } from "vitest";
import * as root from "../../src/index.js";

// What `import ... from "selfheal"` offers at run time, written down: a name added to the root is a
// promise to every user, so it is added here on purpose. The front ends use src/internal.ts.
const ROOT_NAMES = [
  "CODE_FILE_NAME",
  "CORE_NODES",
  "ContextSchema",
  "DEFAULT_LIMITS",
  "InvalidSettingsError",
  "LANGUAGES",
  "MAX_ATTEMPTS_LIMIT",
  "MissingModelConfigError",
  "ModelCallMissError",
  "RUN_CANCELLED_NOTE",
  "RecordedChatModel",
  "SANDBOX_KINDS",
  "STRATEGIES",
  "SandboxUnavailableError",
  "ScriptedChatModel",
  "SelfhealError",
  "SettingsSchema",
  "SharedSandboxes",
  "StoreConnectionError",
  "StoreUnavailableError",
  "ThreadBusyError",
  "ThreadHasRunError",
  "UsageError",
  "blockExecution",
  "buildAgentGraph",
  "checkRunInput",
  "checkSandbox",
  "collectArtifacts",
  "createAgent",
  "createChatModel",
  "createSandbox",
  "decideAfterCritic",
  "describeStatus",
  "failAttempt",
  "parseError",
  "parseSettings",
  "planResume",
  "resolveLimits",
  "routeAfterCritic",
  "routeAfterWrite",
  "safeRelativePath",
  "studioDeclaration",
];

describe("the root entry", () => {
  it("offers what a user of createAgent needs, and nothing of the front ends' internals", () => {
    expect(Object.keys(root).sort()).toEqual([...ROOT_NAMES].sort());
  });
});
