import { createHash } from 'node:crypto';
import { mkdir, open, readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CredentialStoreError } from './store.js';

/** A lock older than this is taken to be left behind by a process that died holding it. */
const STALE_MS = 30_000;
/** How long a process waits for a lock another one holds before it gives up. */
const WAIT_MS = 60_000;
const POLL_MS = 25;

/**
 * Work on one stored secret that must not overlap with the same work in another process (two
 * gateways sharing a credential store must not both spend a rotating refresh token): a lock
 * file per secret in `folder`, made with O_EXCL. A lock whose process is gone, or that is older
 * than `STALE_MS`, is removed and taken over, so a crash never leaves a secret locked.
 */
export function fileLocks(folder: string) {
  return async function exclusive<T>(name: string, work: () => Promise<T>): Promise<T> {
    const file = path.join(folder, `${createHash('sha256').update(name).digest('hex').slice(0, 32)}.lock`);
    await mkdir(folder, { recursive: true, mode: 0o700 });
    await acquire(file, name);
    try {
      return await work();
    } finally {
      await rm(file, { force: true });
    }
  };
}

async function acquire(file: string, name: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    try {
      const handle = await open(file, 'wx', 0o600);
      await handle.writeFile(String(process.pid));
      await handle.close();
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    if (await stale(file)) {
      await rm(file, { force: true });
      continue;
    }
    if (Date.now() > deadline)
      throw new CredentialStoreError(
        `another mcp-warden process has held the lock on "${name}" for over ${WAIT_MS / 1000} s (${file})`,
      );
    await sleep(POLL_MS);
  }
}

/** Whether a lock file was left by a process that is gone, or is too old to be a live one. */
async function stale(file: string): Promise<boolean> {
  const [info, text] = await Promise.all([
    stat(file).catch(() => undefined),
    readFile(file, 'utf8').catch(() => ''),
  ]);
  if (info === undefined) return false;
  if (Date.now() - info.mtimeMs > STALE_MS) return true;
  const pid = Number(text);
  // An empty file is a lock being written this moment.
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
