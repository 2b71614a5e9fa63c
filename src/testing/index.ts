/**
 * `selfheal/testing`: the sandbox contract's conformance suite, for anyone's backend. It is built on
 * vitest, a peer dependency of this entry only: `import "selfheal"` never loads it.
 */
export { type ConformanceGap, type ConformanceOptions, describeSandboxConformance } from "./conformance.js";
export { forkAndSleep, type OwnerCommand } from "./owner.js";
export { pidsWithMarker } from "./processes.js";
