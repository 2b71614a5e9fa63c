import { type Command, Option } from "commander";

// The store flags, apart from the store itself: a command declares them without loading a
// database driver, so a usage error is found before anything heavy loads.

/** Where the CLI keeps runs; shared by every command that reads or writes them. */
export interface StoreFlags {
  db?: string;
  postgres?: string;
}

export function addStoreOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        "--db <path>",
        "SQLite file for checkpoints (default $SELFHEAL_DB, or .selfheal/checkpoints.db in the nearest folder up that has .selfheal/)",
      ).conflicts("postgres"),
    )
    .option("--postgres <url>", "store checkpoints in PostgreSQL, shared by many workers (or $SELFHEAL_POSTGRES_URL)");
}
