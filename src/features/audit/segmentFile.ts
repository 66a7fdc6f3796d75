import {
  closeSync,
  constants,
  fdatasyncSync,
  fstatSync,
  fsyncSync,
  openSync,
  readdirSync,
  renameSync,
  statSync,
  unlinkSync,
} from 'node:fs';
import path from 'node:path';
import { GENESIS_HASH } from '../../core/events.js';
import type { ChainHead } from './chain.js';
import { ShortWrite, type LineBatch } from './lineBatch.js';
import { endsWithNewline, lastRecordIn, lastRecordInFd } from './tailScan.js';
import { codedError } from './writeError.js';

/** How long a rotation lock may exist before it is taken as left behind by a killed process. */
const STALE_LOCK_MS = 10_000;

/** What the segment file asks of its writer's settings, read at each use (they may be retuned). */
export interface SegmentSettings {
  readonly maxBytes?: number;
  readonly maxFiles: number;
  readonly fsync?: boolean;
}

export interface SegmentEvents {
  /** Rotation failed; records keep going into the current file. */
  readonly rotateFailed: (error: unknown) => void;
  /** A short write left part of a line in the file: the next record must be the recovery. */
  readonly torn: () => void;
}

/**
 * The audit file a writer appends to: opened with O_APPEND (and reopened when another writer or
 * logrotate moved it), written with one write(2) of whole lines, and rotated under a lock file
 * (see the top of auditWriter.ts for why these are the rules).
 */
export class SegmentFile {
  readonly file: string;
  readonly #settings: () => SegmentSettings;
  readonly #events: SegmentEvents;
  #fd: number | undefined;
  #ino = 0;
  #dev = 0;
  #size = 0;
  #regular = true;
  /** The file does not end with a newline (a torn write): start the next line with one. */
  #needsNewline = false;
  /** Whether the end of the file was checked for a torn line (done once, at the first open). */
  #checkedTail = false;
  /** The descriptor was opened read-write (else write-only: the file's permissions). */
  #readable = false;
  /** When the file was last changed before this writer opened it: a torn record's time, at worst. */
  #mtime: string | undefined;

  constructor(file: string, settings: () => SegmentSettings, events: SegmentEvents) {
    this.file = file;
    this.#settings = settings;
    this.#events = events;
  }

  /** Bytes in the current file, as of the last open, check or write. */
  get size(): number {
    return this.#size;
  }

  get isOpen(): boolean {
    return this.#fd !== undefined;
  }

  /** When the file was last changed before this writer opened it. */
  get mtime(): string | undefined {
    return this.#mtime;
  }

  /** fdatasync of the open file; throws as the system does. */
  datasync(): void {
    if (this.#fd !== undefined) fdatasyncSync(this.#fd);
  }

  /**
   * Appends whole lines with one write(2), rotating first when they would take the file past
   * `maxBytes`; throws on any failure (`ShortWrite` when only part of `text` went in).
   */
  write(batch: LineBatch): void {
    const bytes = batch.bytes;
    // Rotate first: a fresh file needs no newline in front of the lines.
    this.#maybeRotate(bytes);
    const newline = this.#needsNewline ? 1 : 0;
    const length = bytes + newline;
    const fd = this.#fd;
    if (fd === undefined) throw codedError('EBADF', 'the audit file is not open');
    // One write(2) of whole lines: the atomicity argument at the top of this file. The lines
    // are already UTF-8 in the batch's buffer (they were hashed there), with a byte kept free
    // in front of them for the newline a torn line before them needs.
    const written = batch.writeTo(fd, newline === 1);
    if (written !== length) {
      this.#size += written;
      if (written >= newline) this.#needsNewline = false;
      const textBytes = Math.max(0, written - newline);
      // Part of a line is in the file: the next line must start on a new one, and the first
      // record after it is the recovery record that tells verify this was a crash, not an edit.
      if (textBytes > 0 && !batch.isLineEnd(textBytes)) {
        this.#needsNewline = true;
        this.#events.torn();
      }
      throw new ShortWrite(written, length, textBytes);
    }
    this.#needsNewline = false;
    this.#size += length;
  }

  /** Opens `file` if needed, and reopens it when it was moved or removed since. */
  ensure(): void {
    const stat = statSync(this.file, { throwIfNoEntry: false });
    if (this.#fd !== undefined) {
      if (stat !== undefined && stat.ino === this.#ino && stat.dev === this.#dev) {
        this.#size = stat.size;
        return;
      }
      this.close();
    }
    // Read-write, so the chain start and the torn-line check read the very file this writer
    // appends to (see chainStart); write-only if the file's permissions allow no more.
    let fd: number;
    try {
      fd = openSync(this.file, constants.O_RDWR | constants.O_APPEND | constants.O_CREAT, 0o600);
      this.#readable = true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EACCES') throw error;
      fd = openSync(this.file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT, 0o600);
      this.#readable = false;
    }
    try {
      const opened = fstatSync(fd);
      this.#ino = opened.ino;
      this.#dev = opened.dev;
      this.#size = opened.size;
      this.#mtime = opened.mtime.toISOString();
      this.#regular = opened.isFile();
      // A torn last line (another writer's short write on a full disk, before we started) would
      // swallow our first record. Checked once only: a reader can see another writer's line
      // half copied (the size grows page by page during one write), and a wrong guess costs an
      // empty line, which verify skips.
      if (!this.#checkedTail) {
        this.#checkedTail = true;
        if (this.#regular && this.#readable && opened.size > 0 && !endsWithNewline(fd, opened.size)) {
          this.#needsNewline = true;
        }
      }
    } catch (error) {
      closeSync(fd);
      throw error;
    }
    this.#fd = fd;
  }

  /**
   * Where this writer's chain starts: the last record of the file it appends to, or of `file.1`
   * if that file is empty. Read through the append descriptor itself, not by name: between this
   * writer's check of the name and its write, another writer may rotate, and a first record
   * appended to the old file must not link to a record in the newer one (verify requires the
   * record a chain starts from to come earlier). A file is rotated only when it is not empty,
   * so an empty one is the newest and `file.1` precedes it.
   */
  chainStart(): { head: ChainHead; torn: boolean; tornTs?: string } {
    const fd = this.#fd;
    const current = fd !== undefined && this.#readable ? lastRecordInFd(fd) : lastRecordIn(this.file);
    // A cut line is at the end only if this writer will append right after it (#needsNewline):
    // read by name, a file may have been rotated meanwhile.
    const torn = current.torn !== undefined && this.#needsNewline;
    const tornInfo = torn
      ? { torn, ...(current.torn?.ts !== undefined && { tornTs: current.torn.ts }) }
      : { torn };
    if (current.head !== undefined) return { head: current.head, ...tornInfo };
    if (current.empty) {
      const rotated = lastRecordIn(`${this.file}.1`);
      if (rotated.head !== undefined) return { head: rotated.head, torn: false };
    }
    return { head: { seq: -1, hash: GENESIS_HASH }, ...tornInfo };
  }

  #maybeRotate(nextBytes: number): void {
    const { maxBytes } = this.#settings();
    if (maxBytes === undefined || !this.#regular) return;
    if (this.#size === 0 || this.#size + nextBytes <= maxBytes) return;
    try {
      this.#rotate();
    } catch (error) {
      this.#events.rotateFailed(error);
      // Keep writing to whatever is open (reopening if the rename went through).
      this.ensure();
    }
  }

  #rotate(): void {
    const lock = `${this.file}.lock`;
    const lockFd = takeLock(lock);
    if (lockFd === undefined) return; // another writer is rotating; this record goes in as is
    try {
      const stat = statSync(this.file, { throwIfNoEntry: false });
      if (stat === undefined || stat.ino !== this.#ino || stat.dev !== this.#dev) {
        this.close(); // someone rotated between our check and the lock: follow them
      } else {
        shiftRotated(this.file, this.#settings().maxFiles);
        renameSync(this.file, `${this.file}.1`);
        this.close();
        if (this.#settings().fsync === true) syncDirectory(path.dirname(this.file));
      }
      this.ensure();
    } finally {
      closeSync(lockFd);
      try {
        unlinkSync(lock);
      } catch {
        // Already gone (judged stale by another writer): nothing to release.
      }
    }
  }

  /** Closes the descriptor; the next `ensure` opens the file again. */
  close(): void {
    if (this.#fd === undefined) return;
    try {
      closeSync(this.#fd);
    } catch {
      // The descriptor is unusable either way; a fresh open follows.
    }
    this.#fd = undefined;
  }
}

function takeLock(lock: string): number | undefined {
  try {
    return openSync(lock, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const stat = statSync(lock, { throwIfNoEntry: false });
  if (stat !== undefined && Date.now() - stat.mtimeMs <= STALE_LOCK_MS) return undefined;
  try {
    unlinkSync(lock);
  } catch {
    // Another writer removed it first; race for it below like everyone else.
  }
  try {
    return openSync(lock, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
    throw error;
  }
}

/**
 * Makes room for `file.1`: `file.N` becomes `file.N+1`, newest last so nothing is overwritten,
 * and `file.N` for N ≥ maxFiles is deleted (the oldest, and leftovers of a larger maxFiles).
 * Only the files that exist are touched: the lock is held meanwhile, so this must be quick.
 */
function shiftRotated(file: string, maxFiles: number): void {
  const dir = path.dirname(file);
  const name = path.basename(file);
  const numbers: number[] = [];
  for (const entry of readdirSync(dir)) {
    if (!entry.startsWith(`${name}.`)) continue;
    const suffix = entry.slice(name.length + 1);
    if (/^[1-9][0-9]{0,8}$/.test(suffix)) numbers.push(Number(suffix));
  }
  numbers.sort((a, b) => b - a);
  for (const n of numbers) {
    const from = `${file}.${n}`;
    if (n >= maxFiles) unlinkIfExists(from);
    else renameIfExists(from, `${file}.${n + 1}`);
  }
}

function renameIfExists(from: string, to: string): void {
  try {
    renameSync(from, to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

function unlinkIfExists(file: string): void {
  try {
    unlinkSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

function syncDirectory(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Not supported everywhere (some filesystems refuse fsync on directories).
  }
}
