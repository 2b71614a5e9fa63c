import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { BIN, cleanEnv, waitFor } from "./cli-helpers.js";
import { scratchDir } from "./scratch.js";

/** A real terminal: a tmux pane running the selfheal binary, read with capture-pane, typed into with send-keys. */
export interface TmuxPane {
  /** The pane's text as a person sees it, wrapped lines joined. */
  screen(): string;
  /** Presses keys in tmux's notation, e.g. "C-c". */
  keys(...keys: string[]): void;
  /** Types a line into the shell that took over once the binary ended, and presses Enter. */
  typeLine(line: string): void;
  /** Polls the screen until `text` is on it. */
  waitFor(text: string | RegExp, what: string, timeoutMs?: number): Promise<void>;
  /** The exit code the shell printed once the binary ended. */
  exitCode(timeoutMs?: number): Promise<number>;
  close(): void;
}

const quote = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;

/**
 * Starts `selfheal ...args` in a detached tmux session of its own (a private server socket, so
 * nothing else's sessions are touched), in a 120x40 terminal, with the environment given. The
 * command is typed into an interactive shell, as a user does: Ctrl-C then reaches the command's
 * process group, not the shell, which prints `EXIT=<code>` when the command ends and can be typed
 * into again. `launcher` is how the binary is started, `node <bin>` unless given (`npx selfheal`
 * in the checkout, as a user types it there).
 */
export function startInTmux(
  args: string[],
  options: { env?: Record<string, string>; cwd: string; launcher?: string[] },
): TmuxPane {
  const dir = scratchDir("tmux");
  const socket = join(dir, "socket");
  const env = cleanEnv({ TERM: "xterm-256color", PS1: "$ ", ...options.env });
  const exports = Object.entries(env)
    .filter(([name, value]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && value !== undefined)
    .map(([name, value]) => `export ${name}=${quote(String(value))}`);
  const rc = join(dir, "rc.sh");
  // The exit code is printed from the prompt, not by `; echo` after the command: an interactive shell
  // drops the rest of a line whose command died of SIGINT, as npm and npx do after Ctrl-C.
  const printExitAfterFirstCommand = `PROMPT_COMMAND='status=$?; [ -n "$ran" ] && echo "EXIT=$status"; ran=1'`;
  writeFileSync(rc, [...exports, `cd ${quote(options.cwd)}`, printExitAfterFirstCommand, ""].join("\n"));
  // The server gets the same environment: a variable cleanEnv removed must not come back from it.
  const tmux = (...tmuxArgs: string[]) =>
    execFileSync("tmux", ["-S", socket, ...tmuxArgs], { encoding: "utf8", env: env as NodeJS.ProcessEnv });
  // remain-on-exit keeps the pane to read if the shell dies.
  tmux(
    "new-session",
    "-d",
    "-x",
    "120",
    "-y",
    "40",
    "-s",
    "selfheal",
    `bash --noprofile --rcfile ${quote(rc)} -i`,
    ";",
    "set-option",
    "-t",
    "selfheal",
    "remain-on-exit",
    "on",
  );
  const command = [...(options.launcher ?? [process.execPath, BIN]), ...args].map(quote).join(" ");
  tmux("send-keys", "-t", "selfheal", "-l", command);
  tmux("send-keys", "-t", "selfheal", "Enter");
  const screen = () => tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", "selfheal");
  const dead = () => tmux("display-message", "-p", "-t", "selfheal", "#{pane_dead}").trim() === "1";
  return {
    screen,
    keys: (...keys) => {
      tmux("send-keys", "-t", "selfheal", ...keys);
    },
    typeLine: (line) => {
      tmux("send-keys", "-t", "selfheal", "-l", line);
      tmux("send-keys", "-t", "selfheal", "Enter");
    },
    waitFor: async (text, what, timeoutMs = 60_000) => {
      const seen = () => (typeof text === "string" ? screen().includes(text) : text.test(screen()));
      await waitFor(seen, what, timeoutMs).catch((error: Error) => {
        throw new Error(`${error.message}; the screen:\n${screen()}`);
      });
    },
    exitCode: async (timeoutMs = 60_000) => {
      let code: number | undefined;
      await waitFor(
        () => {
          const match = /EXIT=(\d+)/.exec(screen());
          if (match) code = Number(match[1]);
          else if (dead())
            throw new Error("the shell died before the binary's exit code was printed (killed by a signal?)");
          return match !== null;
        },
        "the binary to exit",
        timeoutMs,
      ).catch((error: Error) => {
        throw new Error(`${error.message}; the screen:\n${screen()}`);
      });
      return code!;
    },
    close: () => {
      try {
        tmux("kill-server");
      } catch {
        // already gone
      }
    },
  };
}
