// `selfheal/settings`: the run settings, their schema and the error classes, with nothing but zod
// behind them. The CLI reads its flags' defaults and choices here, so `selfheal --help` and a
// usage error load no LangGraph, LangChain or database driver; the queue's schema name rule too,
// so a command checks `--queue-schema` without loading pg-boss.

export {
  InvalidSettingsError,
  MissingModelConfigError,
  SandboxUnavailableError,
  SelfhealError,
  type SelfhealErrorCode,
  StoreConnectionError,
  ThreadBusyError,
  ThreadHasRunError,
  UsageError,
} from "./core/errors.js";
export { checkSchemaName, DEFAULT_QUEUE_SCHEMA, type QueueSchemaName } from "./core/queue-schema.js";
export { LANGUAGES, type Language, SANDBOX_KINDS, type SandboxKind } from "./core/run-result.js";
export {
  ContextSchema,
  checkSettingCombinations,
  formatIssues,
  MAX_ATTEMPTS_LIMIT,
  MAX_CANDIDATES,
  type PackageInstall,
  type Packages,
  PackagesSchema,
  parseSettings,
  type Settings,
  type SettingsInput,
  SettingsSchema,
  STRATEGIES,
  type Strategy,
} from "./core/settings.js";
export type { ModelCallsMode } from "./tools/recorded-model.js";
