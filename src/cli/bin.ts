import { main } from "./main.js";

main().then(exitWhenWritten, (error: unknown) => {
  process.stderr.write(
    `selfheal: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  exitWhenWritten(1);
});

/**
 * Exits once stdout and stderr have taken everything written to them. A pipe takes 64 KiB at a time,
 * and `process.exit()` drops whatever is still queued: `selfheal runs --json | jq` got cut there.
 * Exiting rather than waiting for the loop to empty, because an open pool or timer would keep it alive.
 */
function exitWhenWritten(code: number): void {
  let pending = 2;
  const written = (): void => {
    pending -= 1;
    if (pending === 0) process.exit(code);
  };
  process.stdout.write("", written);
  process.stderr.write("", written);
}
