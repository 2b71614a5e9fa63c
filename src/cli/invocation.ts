import { accessSync, constants as fsConstants, realpathSync } from "node:fs";
import { delimiter, isAbsolute, join, relative, sep } from "node:path";

/** How this process was started: what npm said, the script Node runs, and where. */
export interface Invocation {
  env: Record<string, string | undefined>;
  /** The script Node runs (`process.argv[1]`). */
  script: string;
  cwd: string;
}

function currentInvocation(): Invocation {
  return { env: process.env, script: process.argv[1] ?? "selfheal", cwd: process.cwd() };
}

/**
 * The words that start this CLI where the user is, for the commands it prints (`resume`,
 * `history`). `selfheal` is on PATH only after an install; in a clone it was started by `npx
 * selfheal`, `npm run selfheal --` or `node bin/selfheal.js`, and the printed line says the same.
 */
export function cliCommand(invocation: Invocation = currentInvocation()): string {
  const { env, script, cwd } = invocation;
  if (env.npm_command === "exec") return "npx selfheal";
  // npm 7-10 name it run-script, npm 11 run.
  if (env.npm_command === "run" || env.npm_command === "run-script") {
    // In the checkout an npm script (`demo`, `selfheal`) started it; in a project that depends on
    // selfheal it was a script of that project, where npx finds the dependency's bin.
    return env.npm_package_name === "selfheal" ? "npm run selfheal --" : "npx selfheal";
  }
  if (sameFile(onPath("selfheal", env.PATH ?? ""), script)) return "selfheal";
  const path = relative(cwd, script);
  const typed = path && !path.startsWith("..") && !isAbsolute(path) ? path : script;
  return `node ${shellWord(typed.includes(sep) ? typed : `.${sep}${typed}`)}`;
}

function onPath(command: string, searchPath: string): string | undefined {
  for (const directory of searchPath.split(delimiter)) {
    if (!directory) continue;
    try {
      accessSync(join(directory, command), fsConstants.X_OK);
      return join(directory, command);
    } catch {
      // not in this folder
    }
  }
  return undefined;
}

function sameFile(a: string | undefined, b: string): boolean {
  if (!a) return false;
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return false;
  }
}

/** A path as one shell word: quoted only when it needs to be. */
export function shellWord(word: string): string {
  return /^[\w./@%+=:,-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
