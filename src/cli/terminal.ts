import pc from "picocolors";

/** How the CLI may draw on one output stream. */
export interface TerminalStyle {
  /** ANSI colours. */
  color: boolean;
  /** A spinner redrawn in place; needs a real terminal, since it moves the cursor. */
  live: boolean;
}

/**
 * Decided per stream, not by picocolors' own default: it looks at stdout, but progress goes to
 * stderr, and `selfheal run ... > program.py` must still colour the progress on the screen.
 * NO_COLOR and FORCE_COLOR count when non-empty, as picocolors reads them. NO_COLOR asks for
 * plain lines, so it turns the spinner off too; FORCE_COLOR colours a pipe but never spins in it.
 */
export function terminalStyle(
  stream: { isTTY?: boolean; columns?: number } = process.stderr,
  env: NodeJS.ProcessEnv = process.env,
): TerminalStyle {
  const terminal = Boolean(stream.isTTY) && env.TERM !== "dumb";
  const color = !env.NO_COLOR && (Boolean(env.FORCE_COLOR) || terminal);
  // A terminal that reports 0 columns (a pty nobody sized) sends ora 9 into an endless loop
  // when it counts the lines to clear; such a terminal gets plain lines.
  const sized = stream.columns === undefined || stream.columns > 0;
  return { color, live: terminal && sized && !env.NO_COLOR };
}

export type Colors = ReturnType<typeof pc.createColors>;

export function colorsFor(style: Pick<TerminalStyle, "color">): Colors {
  return pc.createColors(style.color);
}
