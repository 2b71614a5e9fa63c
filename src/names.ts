// The run settings' names, choices and defaults and the error classes, with nothing behind them:
// the CLI declares its flags from here, so `--help` and a usage error load no schema (zod), no
// graph and no database driver. Internal: the public `selfheal/settings` has all of it and the schema.

export { InvalidSettingsError, UsageError } from "./core/errors.js";
export { DEFAULT_DELIVERY, DEFAULT_QUEUE_SCHEMA, type DeliveryPolicy } from "./core/queue-schema.js";
export {
  LANGUAGES,
  SANDBOX_KINDS,
  type SandboxKind,
  STRATEGIES,
  type Strategy,
} from "./core/setting-names.js";
export {
  flagOf,
  SETTING_TABLE,
  type SettingKey,
  type SettingSpec,
  type SettingTable,
  settingDefaults,
} from "./core/setting-table.js";
export { didYouMean } from "./core/spelling.js";
