import { watch, type FSWatcher } from 'node:fs';
import path from 'node:path';
import { describeError } from './describeError.js';

export interface WatchFilesOptions {
  readonly files: readonly string[];
  /** One or more of the files changed (once per quiet period). */
  readonly onChange: () => void;
  /** A folder cannot be watched; the message says which and why. */
  readonly onError: (message: string) => void;
  /** What is watched for, in messages: `cannot watch DIR for <what>`. */
  readonly what: string;
  /** Quiet period after a change before `onChange`: editors write files in several steps. Default 100 ms. */
  readonly debounceMs?: number;
}

export interface FileWatcher {
  close(): void;
}

/**
 * Calls `onChange` when any of `files` changes on disk. Watches their folders, not the files:
 * editors, `mv` and atomic writers replace a file by renaming over it, which a watch on the old
 * inode never sees. Never keeps the process alive.
 */
export function watchFiles(options: WatchFilesOptions): FileWatcher {
  const names = new Map<string, Set<string>>();
  for (const file of options.files) {
    const dir = path.dirname(file);
    names.set(dir, (names.get(dir) ?? new Set()).add(path.basename(file)));
  }
  let timer: NodeJS.Timeout | undefined;
  const watchers: FSWatcher[] = [];
  const cannotWatch = (dir: string, error: unknown) =>
    options.onError(`cannot watch ${dir} for ${options.what}: ${describeError(error)}`);
  for (const [dir, files] of names) {
    try {
      const watcher = watch(dir, { persistent: false }, (_event, name) => {
        if (name !== null && !files.has(name.toString())) return;
        clearTimeout(timer);
        timer = setTimeout(options.onChange, options.debounceMs ?? 100);
      });
      watcher.on('error', (error) => cannotWatch(dir, error));
      watchers.push(watcher);
    } catch (error) {
      cannotWatch(dir, error);
    }
  }
  return {
    close() {
      clearTimeout(timer);
      for (const w of watchers) w.close();
    },
  };
}
