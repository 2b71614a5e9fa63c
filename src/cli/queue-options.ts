import type { Command } from "commander";
import { DEFAULT_QUEUE_SCHEMA } from "../names.js";
import type { StoreFlags } from "./store-options.js";

// The queue's flag, apart from the queue: declared without loading the settings, the store or pg-boss.

export interface QueueFlags extends StoreFlags {
  queueSchema?: string;
}

export function addQueueOptions(command: Command): Command {
  return command.option(
    "--queue-schema <name>",
    `PostgreSQL schema of the queue (default $SELFHEAL_QUEUE_SCHEMA or ${DEFAULT_QUEUE_SCHEMA})`,
  );
}
