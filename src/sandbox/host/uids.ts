/**
 * Unprivileged host uids for runs, when selfheal runs as root.
 *
 * When selfheal runs as root, the code must not: RLIMIT_NPROC is ignored for the real root user
 * even inside a user namespace, so a fork bomb would go unchecked. Each run then gets its own
 * unprivileged host uid from this range (no /etc/passwd entry needed), which makes the process cap
 * per run and keeps concurrent runs from counting against each other. The range is far above any
 * uid a distribution or a rootless-container subuid range hands out.
 */
export const HOST_UID_BASE = 1_500_000_000;
const HOST_UID_RANGE = 1_000_000;

/** Hands out a distinct unprivileged host uid to each run in flight. */
class HostUidPool {
  private readonly inUse = new Set<number>();
  // Different selfheal processes (parallel test workers) start at different points of the range.
  private readonly offset = (process.pid * 64) % HOST_UID_RANGE;

  acquire(): number {
    for (let slot = 0; slot < HOST_UID_RANGE; slot++) {
      const uid = HOST_UID_BASE + ((this.offset + slot) % HOST_UID_RANGE);
      if (!this.inUse.has(uid)) {
        this.inUse.add(uid);
        return uid;
      }
    }
    throw new Error("no free sandbox uid");
  }

  release(uid: number): void {
    this.inUse.delete(uid);
  }
}

export const hostUids = new HostUidPool();
