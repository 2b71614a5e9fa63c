/**
 * `selfheal/testing`: the sandbox contract's conformance suite and the hostile-code suite, for
 * anyone's backend. Each registers its cases with the test functions the test file gives it
 * (`runner: { describe, it, expect, beforeAll, afterAll, afterEach }` from vitest), so this entry
 * loads no test framework itself.
 */
export { type ConformanceGap, type ConformanceOptions, describeSandboxConformance } from "./conformance.js";
export {
  describeHostileSuite,
  type EscapingCase,
  type ExpectedEscapes,
  type HostileCase,
  type HostileSuiteOptions,
} from "./hostile.js";
export type { OwnerCommand } from "./owner.js";
export type { TestRunner } from "./runner.js";
