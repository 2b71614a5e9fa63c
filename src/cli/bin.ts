import { main } from "./main.js";

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(
      `selfheal: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
