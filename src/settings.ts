// `selfheal/settings`: the run settings, their schema and the error classes, with nothing but zod
// behind them, for a program that checks settings or a queued task without loading LangGraph,
// LangChain or a database driver; the queue's schema name rule too, without pg-boss.

export * from "./common-exports.js";
export { checkSchemaName, DEFAULT_QUEUE_SCHEMA, type QueueSchemaName } from "./core/queue-schema.js";
export type { Language, SandboxKind } from "./core/run-result.js";
export {
  type AllowHosts,
  AllowHostsSchema,
  checkSettingCombinations,
  formatIssues,
  MAX_CANDIDATES,
  type PackageInstall,
  type Packages,
  PackagesSchema,
} from "./core/settings.js";
export type { ModelCallsMode } from "./tools/recorded-model.js";
