/**
 * What counts as a secret when a program's values are shown to a model, a report or a checkpoint.
 * The sandbox gives programs no host environment at all (an allowlist: PATH, HOME, the locale), so
 * a secret reaches a value only from the program's own text or an input file; these shapes catch
 * the common ones. Each source is kept to the syntax Python's `re` and JavaScript's RegExp share,
 * because the harnesses inside the sandbox mask with the same list before a value leaves the run.
 */
export const SECRET_VALUE_PATTERNS: readonly string[] = [
  // OpenAI, Anthropic and most "sk-" style keys.
  "sk-[A-Za-z0-9_-]{16,}",
  // GitHub tokens.
  "gh[pousr]_[A-Za-z0-9]{20,}",
  "github_pat_[A-Za-z0-9_]{20,}",
  // AWS access key ids.
  "(?:AKIA|ASIA)[0-9A-Z]{16}",
  // Slack tokens.
  "xox[abposr]-[A-Za-z0-9-]{10,}",
  // Google API keys.
  "AIza[0-9A-Za-z_-]{30,}",
  // JSON web tokens.
  "eyJ[A-Za-z0-9_-]{10,}\\.[A-Za-z0-9_-]{10,}\\.[A-Za-z0-9_-]{10,}",
  // Bearer headers and PEM private keys.
  "[Bb]earer [A-Za-z0-9._~+/-]{16,}=*",
  "-----BEGIN [A-Z ]*PRIVATE KEY-----",
];

/** Names whose values are never shown, whatever they hold (case-insensitive). */
export const SECRET_NAME_PATTERN = "api[_-]?key|secret|token|passw(?:or)?d|credential|private[_-]?key|auth[_-]?header";

const SECRET_VALUES = SECRET_VALUE_PATTERNS.map((source) => new RegExp(source, "g"));
const SECRET_NAME = new RegExp(SECRET_NAME_PATTERN, "i");

/** Whether a variable, key or setting of this name holds a secret by its name alone. */
export const isSecretName = (name: string): boolean => SECRET_NAME.test(name);

/**
 * The host's own secrets: values of its environment variables whose names say secret (the model
 * key, tokens). A program cannot read them, but one could be pasted into the task or an input.
 */
export function hostSecrets(env: NodeJS.ProcessEnv = process.env): string[] {
  return Object.entries(env)
    .filter(([name, value]) => value !== undefined && value.length >= 8 && isSecretName(name))
    .map(([, value]) => value as string);
}

/** The text with every secret-shaped part and every given secret replaced by `<masked>`. */
export function maskSecrets(text: string, secrets: readonly string[] = hostSecrets()): string {
  let masked = text;
  for (const pattern of SECRET_VALUES) masked = masked.replace(pattern, "<masked>");
  for (const secret of secrets) masked = masked.split(secret).join("<masked>");
  return masked;
}
