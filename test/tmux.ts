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
 * shell prints `EXIT=<code>` when the binary ends and keeps the pane open to be read.
 */
export function startInTmux(args: string[], options: { env?: Record<string, string>; cwd: string }): TmuxPane {
  const dir = scratchDir("tmux");
  const socket = join(dir, "socket");
  const env = cleanEnv({ TERM: "xterm-256color", ...options.env });
  const exports = Object.entries(env)
    .filter(([name, value]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && value !== undefined)
    .map(([name, value]) => `export ${name}=${quote(String(value))}`);
  const script = join(dir, "run.sh");
  writeFileSync(
    script,
    [
      ...exports,
      `cd ${quote(options.cwd)}`,
      `${[process.execPath, BIN, ...args].map(quote).join(" ")}`,
      'echo "EXIT=$?"',
      "sleep 600",
      "",
    ].join("\n"),
  );
  const tmux = (...tmuxArgs: string[]) => execFileSync("tmux", ["-S", socket, ...tmuxArgs], { encoding: "utf8" });
  // remain-on-exit keeps the pane to read when the shell dies with the binary (killed by a signal).
  tmux(
    "new-session",
    "-d",
    "-x",
    "120",
    "-y",
    "40",
    "-s",
    "selfheal",
    `bash ${quote(script)}`,
    ";",
    "set-option",
    "-t",
    "selfheal",
    "remain-on-exit",
    "on",
  );
  const screen = () => tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", "selfheal");
  const dead = () => tmux("display-message", "-p", "-t", "selfheal", "#{pane_dead}").trim() === "1";
  return {
    screen,
    keys: (...keys) => {
      tmux("send-keys", "-t", "selfheal", ...keys);
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
