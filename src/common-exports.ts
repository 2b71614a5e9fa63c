// What both public entries export, listed once: the root (`selfheal`, index.ts) for a program that
// runs the agent, and `selfheal/settings` (settings.ts), which loads nothing but zod, for one that
// only checks settings. Each entry adds its own names to these.

// Every error selfheal throws on purpose: `instanceof SelfhealError`, told apart by `code`.
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
export { LANGUAGES, SANDBOX_KINDS } from "./core/run-result.js";
// Settings: `invoke`'s context, checked and filled in by `parseSettings`.
export {
  ContextSchema,
  MAX_ATTEMPTS_LIMIT,
  parseSettings,
  type Settings,
  type SettingsInput,
  SettingsSchema,
  STRATEGIES,
  type Strategy,
} from "./core/settings.js";
