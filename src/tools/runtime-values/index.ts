export { describeRuntimeValues } from "../../core/runtime-values-text.js";
export { HARNESS_LIMITS, type InstrumentedProgram, instrumentProgram, VALUES_PREFIX } from "./instrument.js";
export { boundRuntimeValues, isValuesLine, takeRuntimeValues } from "./read-values.js";
