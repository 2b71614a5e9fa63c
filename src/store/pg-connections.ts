import type pg from "pg";

/**
 * A connection that dies while no query of ours is on it says so with an 'error' event, which ends
 * the process when nobody listens: pg's pool listens only while the connection is idle in it, not
 * while it is checked out between two queries (a saver's transaction, a held lock). So every
 * connection the pool makes is listened to for its whole life; the next query on a dead one fails
 * with an error the caller sees (and waits out), and the pool then drops it.
 */
export function quietConnectionErrors(pool: Pick<pg.Pool, "on">): void {
  pool.on("error", () => undefined);
  pool.on("connect", (client) => client.on("error", () => undefined));
}
