/**
 * `selfheal/testing`: the sandbox contract's conformance suite and the hostile-code suite, for
 * anyone's backend. They are built on vitest, a peer dependency of this entry only: `import
 * "selfheal"` never loads it.
 */
export { type ConformanceGap, type ConformanceOptions, describeSandboxConformance } from "./conformance.js";
export {
  describeHostileSuite,
  type EscapingCase,
  type ExpectedEscapes,
  type HostileCase,
  type HostileSuiteOptions,
} from "./hostile.js";
export { diskFillProgram } from "./hostile-programs.js";
export { forkAndSleep, type OwnerCommand } from "./owner.js";
export { pidsWithMarker } from "./processes.js";
