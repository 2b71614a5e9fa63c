import { execFile } from "node:child_process";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

/**
 * A deadline for mount(8) and umount(8): a run waits on them before its own clock starts, and the
 * start-up sweep before the first run. Past it the mount fails with an error instead of waiting forever.
 */
const MOUNT_TIMEOUT_MS = 30_000;

/** Mounts a tmpfs with these options at `path`; rejects on a failure or past the deadline. */
export async function mountTmpfs(
  mount: string,
  options: string,
  path: string,
  timeoutMs = MOUNT_TIMEOUT_MS,
): Promise<void> {
  await execFileAsync(mount, ["-t", "tmpfs", "-o", options, "selfheal-run", path], { timeout: timeoutMs });
}

/** Detaches the mount at `path` now; it goes once nothing uses it. Never throws. */
export async function unmountLazily(umount: string, path: string): Promise<void> {
  await execFileAsync(umount, ["-l", path], { timeout: MOUNT_TIMEOUT_MS }).catch(() => undefined);
}
