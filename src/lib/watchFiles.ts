import { statSync, watch, type BigIntStats, type FSWatcher } from 'node:fs';
import path from 'node:path';
import { describeError } from './describeError.js';

export interface WatchFilesOptions {
  readonly files: readonly string[];
  /** One or more of the files changed, and they have been stable for `debounceMs` since. */
  readonly onChange: () => void;
  /** A folder cannot be watched; the message says which and why. */
  readonly onError: (message: string) => void;
  /** What is watched for, in messages: `cannot watch DIR for <what>`. */
  readonly what: string;
  /**
   * How long the files must stay unchanged (no event, and the same size, time and inode when
   * looked at twice this far apart) before `onChange`: editors and scripts write files in
   * several steps. Default 100 ms.
   */
  readonly debounceMs?: number;
  /**
   * How often the folders and files are looked at (one `stat` each) in case no event came: a
   * folder deleted and created again, or renamed away and replaced, leaves its watch on the old
   * folder, which never reports again. Default 500 ms.
   */
  readonly pollMs?: number;
}

export interface FileWatcher {
  close(): void;
}

/** One watched folder. */
interface Folder {
  readonly dir: string;
  readonly names: Set<string>;
  watcher: FSWatcher | undefined;
  /** `dev:ino` of the folder the watch is on; undefined while it does not exist. */
  id: string | undefined;
  /** Whether an error was reported since the watch last worked (reported once, not per poll). */
  reported: boolean;
}

/**
 * Calls `onChange` when any of `files` changes on disk and has then stayed the same for
 * `debounceMs`. Watches their folders, not the files: editors, `mv` and atomic writers replace a
 * file by renaming over it, which a watch on the old inode never sees. A folder that is deleted
 * and created again, or renamed and replaced, is noticed by a poll (one `stat` per folder and
 * file every `pollMs`) and watched again. Never keeps the process alive.
 */
export function watchFiles(options: WatchFilesOptions): FileWatcher {
  const debounceMs = options.debounceMs ?? 100;
  const pollMs = options.pollMs ?? 500;
  const folders = new Map<string, Folder>();
  for (const file of options.files) {
    const dir = path.dirname(file);
    const folder = folders.get(dir);
    if (folder !== undefined) folder.names.add(path.basename(file));
    else
      folders.set(dir, {
        dir,
        names: new Set([path.basename(file)]),
        watcher: undefined,
        id: undefined,
        reported: false,
      });
  }
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  /** What the files looked like when last checked while settling; undefined right after a change. */
  let settling: string | undefined;
  /** What the files looked like when `onChange` was last called (or at the start). */
  let applied = signature(options.files);

  const cannotWatch = (folder: Folder, error: unknown) => {
    if (folder.reported) return;
    folder.reported = true;
    options.onError(`cannot watch ${folder.dir} for ${options.what}: ${describeError(error)}`);
  };

  /** Watches `folder` as it is now on disk (again, after it was replaced). */
  const arm = (folder: Folder) => {
    folder.watcher?.close();
    folder.watcher = undefined;
    folder.id = folderId(folder.dir);
    if (folder.id === undefined) return;
    try {
      const watcher = watch(folder.dir, { persistent: false }, (_event, name) => {
        if (name !== null && !folder.names.has(name.toString())) return;
        changed();
      });
      watcher.on('error', (error) => {
        // The folder went away under the watch: the poll watches it again once it is back.
        watcher.close();
        if (folder.watcher === watcher) folder.watcher = undefined;
        if (folderId(folder.dir) !== undefined) cannotWatch(folder, error);
      });
      folder.watcher = watcher;
      folder.reported = false;
    } catch (error) {
      cannotWatch(folder, error);
    }
  };

  const changed = () => {
    if (closed) return;
    settling = undefined;
    clearTimeout(timer);
    timer = setTimeout(settle, debounceMs);
  };

  /** Calls `onChange` once two looks `debounceMs` apart see the same files; else waits again. */
  const settle = () => {
    timer = undefined;
    const now = signature(options.files);
    if (now !== settling) {
      settling = now;
      timer = setTimeout(settle, debounceMs);
      return;
    }
    settling = undefined;
    applied = now;
    options.onChange();
  };

  const poll = setInterval(() => {
    for (const folder of folders.values()) {
      const id = folderId(folder.dir);
      if (id !== folder.id || (id !== undefined && folder.watcher === undefined)) {
        arm(folder);
        changed();
      }
    }
    // A change no event reported (some filesystems have none): seen here, within `pollMs`.
    if (timer === undefined && signature(options.files) !== applied) changed();
  }, pollMs);
  poll.unref();

  for (const folder of folders.values()) {
    if (folderId(folder.dir) === undefined) {
      cannotWatch(folder, new Error('no such folder (watched again when it exists)'));
    }
    arm(folder);
  }

  return {
    close() {
      closed = true;
      clearTimeout(timer);
      clearInterval(poll);
      for (const folder of folders.values()) folder.watcher?.close();
    },
  };
}

/** Like `statSync`, undefined for anything that cannot be looked at (missing, a file in the path, permissions). */
function statOf(file: string): BigIntStats | undefined {
  try {
    return statSync(file, { throwIfNoEntry: false, bigint: true });
  } catch {
    return undefined;
  }
}

function folderId(dir: string): string | undefined {
  const stat = statOf(dir);
  return stat?.isDirectory() === true ? `${stat.dev}:${stat.ino}` : undefined;
}

/** The files as `stat` sees them: replaced, grown, shrunk or touched files give another text. */
function signature(files: readonly string[]): string {
  let text = '';
  for (const file of files) {
    const stat = statOf(file);
    text +=
      stat === undefined ? '-|' : `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}|`;
  }
  return text;
}
