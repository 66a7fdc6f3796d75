import { createHash, randomUUID } from 'node:crypto';
import { link, mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CredentialStoreError } from './store.js';

/** A lock older than this is taken to be left behind by a process that died holding it. */
const STALE_MS = 30_000;
/** How long a process waits for a lock another one holds before it gives up. */
const WAIT_MS = 60_000;
const POLL_MS = 25;

export interface FileLockOptions {
  /**
   * Called when a lock has been judged stale, before it is taken over. Tests hold takers here so
   * that several meet at the same stale lock.
   */
  readonly judgedStale?: () => Promise<void>;
  /** Called each time a taker finds the lock held by a live process and waits. */
  readonly waiting?: () => void;
}

/**
 * Work on one stored secret that must not overlap with the same work in another process (two
 * gateways sharing a credential store must not both spend a rotating refresh token): a lock
 * file per secret in `folder`, made with O_EXCL. A lock whose process is gone, or that is older
 * than `STALE_MS`, is taken over (see `takeOver`), so a crash never leaves a secret locked.
 */
export function fileLocks(folder: string, options: FileLockOptions = {}) {
  return async function exclusive<T>(name: string, work: () => Promise<T>): Promise<T> {
    const file = path.join(folder, `${createHash('sha256').update(name).digest('hex').slice(0, 32)}.lock`);
    await mkdir(folder, { recursive: true, mode: 0o700 });
    await acquire(file, name, options);
    try {
      return await work();
    } finally {
      await rm(file, { force: true });
    }
  };
}

async function acquire(file: string, name: string, options: FileLockOptions): Promise<void> {
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
    const judged = await staleLock(file);
    if (judged !== undefined) {
      await options.judgedStale?.();
      await takeOver(file, judged);
      continue;
    }
    if (Date.now() > deadline)
      throw new CredentialStoreError(
        `another mcp-warden process has held the lock on "${name}" for over ${WAIT_MS / 1000} s (${file})`,
      );
    options.waiting?.();
    await sleep(POLL_MS);
  }
}

/** What identifies one lock file: a new lock made in its place differs in one of these. */
interface LockIdentity {
  readonly ino: number;
  readonly mtimeMs: number;
  readonly text: string;
}

/**
 * Removes the stale lock `judged` from `file`, and only that one. Several takers may judge the
 * same lock stale at once: removing it by name would let a slower one remove the fresh lock a
 * faster one has made in its place meanwhile, and both would hold it. So the lock is first
 * renamed to a name of this taker's own (a rename moves one file, atomically, and only one
 * taker's rename finds it), then looked at: the stale lock is removed; a live lock moved by
 * mistake is linked back under its name (link fails rather than replace a lock made meanwhile).
 */
async function takeOver(file: string, judged: LockIdentity): Promise<void> {
  const aside = `${file}.${randomUUID()}.stale`;
  try {
    await rename(file, aside);
  } catch (error) {
    // Another taker moved it first.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  try {
    const moved = await identify(aside);
    const same =
      moved !== undefined &&
      moved.ino === judged.ino &&
      moved.mtimeMs === judged.mtimeMs &&
      moved.text === judged.text;
    if (!same)
      await link(aside, file).catch((error: unknown) => {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      });
  } finally {
    await rm(aside, { force: true });
  }
}

async function identify(file: string): Promise<LockIdentity | undefined> {
  const [info, text] = await Promise.all([
    stat(file).catch(() => undefined),
    readFile(file, 'utf8').catch(() => ''),
  ]);
  return info === undefined ? undefined : { ino: info.ino, mtimeMs: info.mtimeMs, text };
}

/**
 * The lock in `file` when it was left by a process that is gone, or is too old to be a live
 * one; undefined when it is live (or gone).
 */
async function staleLock(file: string): Promise<LockIdentity | undefined> {
  const lock = await identify(file);
  if (lock === undefined) return undefined;
  if (Date.now() - lock.mtimeMs > STALE_MS) return lock;
  const pid = Number(lock.text);
  // An empty file is a lock being written this moment.
  if (lock.text === '' || !Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
    return undefined;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH' ? lock : undefined;
  }
}
