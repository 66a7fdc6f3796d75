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

/** One watched file: a watch on the file itself, while it exists. */
interface File {
  readonly file: string;
  readonly folder: Folder;
  watcher: FSWatcher | undefined;
  /** `dev:ino` of the file the watch is on; undefined while there is none. */
  id: string | undefined;
}

/** The folder of watched files: watched itself only while one of them is missing. */
interface Folder {
  readonly dir: string;
  watcher: FSWatcher | undefined;
  /** `dev:ino` of the folder the watch is on; undefined while there is none. */
  id: string | undefined;
  /** Whether an error was reported since a watch there last worked (once, not per poll). */
  reported: boolean;
}

/**
 * Calls `onChange` when any of `files` changes on disk and has then stayed the same for
 * `debounceMs`.
 *
 * Each file is watched itself, not its folder: a folder's watch wakes the process for every
 * write to any file in it, and the audit file often lives beside the policy (each audit write
 * then cost a wake-up). Editors, `mv` and atomic writers replace a file by renaming over it: the
 * old file's watch reports that it was unlinked, and the new file is watched in its place. A
 * file that does not exist is waited for by watching its folder until it does. Whatever no
 * event reports (a folder deleted and created again, or renamed away and replaced, or a
 * filesystem without events) is noticed by a poll, one `stat` per file and folder every
 * `pollMs`. Never keeps the process alive.
 */
export function watchFiles(options: WatchFilesOptions): FileWatcher {
  return new FilesWatch(options);
}

class FilesWatch implements FileWatcher {
  private readonly debounceMs: number;
  private readonly folders = new Map<string, Folder>();
  private readonly files: File[] = [];
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  /** What the files looked like when last checked while settling; undefined right after a change. */
  private settling: string | undefined;
  /** What the files looked like when `onChange` was last called (or at the start). */
  private applied: string;
  private readonly poll: NodeJS.Timeout;

  constructor(private readonly options: WatchFilesOptions) {
    this.debounceMs = options.debounceMs ?? 100;
    for (const file of options.files) {
      const dir = path.dirname(file);
      let folder = this.folders.get(dir);
      if (folder === undefined)
        this.folders.set(dir, (folder = { dir, watcher: undefined, id: undefined, reported: false }));
      this.files.push({ file, folder, watcher: undefined, id: undefined });
    }
    this.applied = signature(options.files);
    this.poll = setInterval(() => this.look(), options.pollMs ?? 500);
    this.poll.unref();
    this.arm({ atStart: true });
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    clearInterval(this.poll);
    for (const entry of this.files) entry.watcher?.close();
    for (const folder of this.folders.values()) folder.watcher?.close();
  }

  /** The poll: what no event reported, a moved file or folder or a changed file, is seen here. */
  private look(): void {
    if (this.arm()) this.changed();
    // A change no event reported (some filesystems have none): seen here, within `pollMs`.
    else if (this.timer === undefined && signature(this.options.files) !== this.applied) this.changed();
  }

  /**
   * Puts each watch where the files are now: on each file that exists (again, when it was
   * replaced), and on the folder of each file that does not. True when a file or folder is not
   * the one it was (a watch that failed and is tried again does not count). A missing folder is
   * reported only `atStart`: later it is being replaced, and the poll watches it once it is back.
   */
  private arm({ atStart = false }: { atStart?: boolean } = {}): boolean {
    const waiting = new Set<Folder>();
    let moved = false;
    for (const entry of this.files) if (this.armFile(entry, waiting)) moved = true;
    for (const folder of this.folders.values())
      if (this.armFolder(folder, waiting.has(folder), atStart)) moved = true;
    return moved;
  }

  /** Watches `entry` if it exists and is not watched yet; else adds its folder to `waiting`. True when it moved. */
  private armFile(entry: File, waiting: Set<Folder>): boolean {
    const id = fileId(entry.file);
    if (id === entry.id && (id === undefined || entry.watcher !== undefined)) {
      if (id === undefined) waiting.add(entry.folder);
      return false;
    }
    entry.watcher?.close();
    entry.watcher = undefined;
    const moved = id !== entry.id;
    entry.id = id;
    if (id === undefined) {
      waiting.add(entry.folder);
      return moved;
    }
    const made = watchOn(
      entry.file,
      // Any event: written in place, or unlinked (replaced or deleted), when `arm` moves it.
      () => {
        this.arm();
        this.changed();
      },
      (watcher) => {
        // The file went away under the watch: the next look watches what is there then.
        watcher.close();
        if (entry.watcher === watcher) entry.watcher = undefined;
      },
    );
    if (made instanceof Error) {
      this.cannotWatch(entry.folder, made);
      waiting.add(entry.folder);
    } else {
      entry.watcher = made;
      entry.folder.reported = false;
    }
    return moved;
  }

  /** Watches `folder` while one of its files is missing (`wanted`), else closes its watch. True when it moved. */
  private armFolder(folder: Folder, wanted: boolean, atStart: boolean): boolean {
    if (!wanted) {
      folder.watcher?.close();
      folder.watcher = undefined;
      folder.id = undefined;
      return false;
    }
    const id = folderId(folder.dir);
    if (id === folder.id && (id === undefined || folder.watcher !== undefined)) return false;
    const moved = id !== folder.id;
    folder.watcher?.close();
    folder.watcher = undefined;
    folder.id = id;
    if (id === undefined) {
      if (atStart) this.cannotWatch(folder, new Error('no such folder (watched again when it exists)'));
      return moved;
    }
    const made = watchOn(
      folder.dir,
      (name) => {
        if (name !== null && !this.files.some((f) => f.folder === folder && path.basename(f.file) === name))
          return;
        this.arm();
        this.changed();
      },
      (watcher, error) => {
        // The folder went away under the watch: the poll watches it again once it is back.
        watcher.close();
        if (folder.watcher === watcher) folder.watcher = undefined;
        if (folderId(folder.dir) !== undefined) this.cannotWatch(folder, error);
      },
    );
    if (made instanceof Error) this.cannotWatch(folder, made);
    else {
      folder.watcher = made;
      folder.reported = false;
    }
    return moved;
  }

  private cannotWatch(folder: Folder, error: unknown): void {
    if (folder.reported) return;
    folder.reported = true;
    this.options.onError(`cannot watch ${folder.dir} for ${this.options.what}: ${describeError(error)}`);
  }

  private changed(): void {
    if (this.closed) return;
    this.settling = undefined;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.settle(), this.debounceMs);
  }

  /** Calls `onChange` once two looks `debounceMs` apart see the same files; else waits again. */
  private settle(): void {
    this.timer = undefined;
    const now = signature(this.options.files);
    if (now !== this.settling) {
      this.settling = now;
      this.timer = setTimeout(() => this.settle(), this.debounceMs);
      return;
    }
    this.settling = undefined;
    this.applied = now;
    this.options.onChange();
  }
}

/** A watch on `target` that calls `onEvent` for each event, or the error it could not be made with. */
function watchOn(
  target: string,
  onEvent: (name: string | null) => void,
  gone: (watcher: FSWatcher, error: Error) => void,
): FSWatcher | Error {
  try {
    const watcher = watch(target, { persistent: false }, (_event, name) =>
      onEvent(name === null ? null : name.toString()),
    );
    watcher.on('error', (error) => gone(watcher, error));
    return watcher;
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
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

function fileId(file: string): string | undefined {
  const stat = statOf(file);
  return stat === undefined || stat.isDirectory() ? undefined : `${stat.dev}:${stat.ino}`;
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
