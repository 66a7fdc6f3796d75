import {
  closeSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';

/*
 * A sink's records wait here, on disk, until the sink has taken them. Every record goes through
 * the spool, not only while the sink is down: one path, so the order is the file's order, and
 * what a killed gateway had not yet sent is sent by the next one (it starts by replaying).
 *
 * Two files in the sink's folder: `queue`, the record lines appended, and `sent`, the byte
 * offset in `queue` up to which the sink has taken them (fixed width, rewritten in place, so a
 * crash leaves the old value or the new one). Once everything is sent and the queue is past
 * 1 MiB, both go back to zero, so the queue does not grow while the sink keeps up; the last line
 * sent is then kept in `last`, so a gateway without a local audit file can continue its hash
 * chain from it at the next start. While records are not kept for the sink (the queue is full),
 * `gap` says how many and which, so that a gateway that exits before it can tell the sink leaves
 * that to the next one. One gateway per spool folder: two would send each other's records twice.
 */

/**
 * Once everything is sent, the queue is emptied only when it has grown past this: emptying it
 * costs a truncate, and a sink that keeps up empties it after every record.
 */
const COMPACT_BYTES = 1024 * 1024;

/** How far back from the end of the queue its last line is looked for. */
const MAX_LINE_SCAN = 1024 * 1024;

/** Bytes read from the queue for one batch at most. */
const BATCH_BYTES = 256 * 1024;

export interface SpoolBatch {
  /** Whole record lines, without their newlines. */
  readonly lines: string[];
  /** The offset after the last of them: give it to `ack` once the sink took them. */
  readonly end: number;
}

export class Spool {
  readonly dir: string;
  readonly maxBytes: number;
  readonly #queueFile: string;
  readonly #sentFile: string;
  #fd: number;
  /** `sent`, kept open: the offset is rewritten in place, one small write per batch. */
  #sentFd: number;
  #size: number;
  #sent: number;
  /** Records in the queue after `#sent`. */
  #pending: number;

  /** Opens (creating) the spool folder; throws when it cannot be used. */
  constructor(dir: string, maxBytes: number) {
    this.dir = dir;
    this.maxBytes = maxBytes;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.#queueFile = path.join(dir, 'queue');
    this.#sentFile = path.join(dir, 'sent');
    this.#fd = openSync(this.#queueFile, 'a+', 0o600);
    this.#size = fstatSync(this.#fd).size;
    this.#sent = Math.min(readOffset(this.#sentFile), this.#size);
    this.#pending = countLines(this.#fd, this.#sent, this.#size);
    this.#sentFd = openSync(this.#sentFile, 'a+', 0o600);
    closeSync(this.#sentFd);
    this.#sentFd = openSync(this.#sentFile, 'r+');
  }

  /** Records waiting, and their bytes. */
  get pending(): { readonly records: number; readonly bytes: number } {
    return { records: this.#pending, bytes: this.#size - this.#sent };
  }

  /**
   * Appends record lines (each ending with a newline). False, and nothing appended, when they
   * would take the waiting bytes past `maxBytes` (unless `overBound`: one small record that must
   * not wait for room); throws when the disk refuses the write.
   */
  append(lines: string, count: number, options: { readonly overBound?: boolean } = {}): boolean {
    const bytes = Buffer.byteLength(lines, 'utf8');
    if (options.overBound !== true && this.#size - this.#sent + bytes > this.maxBytes) return false;
    const written = writeSync(this.#fd, lines, null, 'utf8');
    this.#size += written;
    if (written !== bytes) {
      // Part of a line in the queue would garble the next record: cut it off again.
      ftruncateSync(this.#fd, this.#size - written);
      this.#size -= written;
      throw new Error(`short write to the spool ${this.#queueFile} (disk full?)`);
    }
    this.#pending += count;
    return true;
  }

  /** The oldest waiting records, up to about 256 KiB (at least one whole line). */
  peek(): SpoolBatch {
    const available = this.#size - this.#sent;
    if (available === 0) return { lines: [], end: this.#sent };
    let want = Math.min(available, BATCH_BYTES);
    for (;;) {
      const buffer = Buffer.alloc(want);
      const n = readSync(this.#fd, buffer, 0, want, this.#sent);
      const last = buffer.lastIndexOf(0x0a, n - 1);
      if (last !== -1) {
        const text = buffer.subarray(0, last).toString('utf8');
        return { lines: text.split('\n'), end: this.#sent + last + 1 };
      }
      if (want >= available) return { lines: [], end: this.#sent }; // no whole line yet
      want = Math.min(available, want * 4); // one record longer than a batch
    }
  }

  /** The sink took the records up to `end` (from `peek`). */
  ack(batch: SpoolBatch): void {
    this.#pending -= batch.lines.length;
    if (batch.end >= this.#size && this.#size > COMPACT_BYTES) {
      // All sent: start both files again, so the queue does not grow without end. The last
      // record is kept first: it is where a file-less trail's chain goes on from.
      const last = batch.lines.at(-1);
      if (last !== undefined) writeFileSync(path.join(this.dir, 'last'), `${last}\n`, { mode: 0o600 });
      ftruncateSync(this.#fd, 0);
      this.#size = 0;
      this.#sent = 0;
      this.#pending = 0;
    } else {
      this.#sent = batch.end;
    }
    writeOffset(this.#sentFd, this.#sent);
  }

  /**
   * Keeps what the sink has not been told yet about records it lost (JSON text), for the next
   * gateway to tell it should this one exit first; undefined removes it (the sink's queue now
   * holds the record that tells it).
   */
  saveGap(json: string | undefined): void {
    const file = path.join(this.dir, 'gap');
    if (json === undefined) rmSync(file, { force: true });
    else writeFileSync(file, json, { mode: 0o600 });
  }

  /** What an earlier run kept with `saveGap`, or undefined. */
  savedGap(): string | undefined {
    try {
      return readFileSync(path.join(this.dir, 'gap'), 'utf8');
    } catch {
      return undefined;
    }
  }

  /** The newest record line the spool has held (waiting, or the last one sent), or undefined. */
  lastLine(): string | undefined {
    if (this.#size > 0) {
      const want = Math.min(this.#size, MAX_LINE_SCAN);
      const buffer = Buffer.alloc(want);
      const n = readSync(this.#fd, buffer, 0, want, this.#size - want);
      const text = buffer.subarray(0, n).toString('utf8').replace(/\n$/, '');
      const line = text.slice(text.lastIndexOf('\n') + 1);
      if (line !== '') return line;
    }
    try {
      const line = readFileSync(path.join(this.dir, 'last'), 'utf8').trim();
      return line === '' ? undefined : line;
    } catch {
      return undefined;
    }
  }

  close(): void {
    for (const fd of [this.#fd, this.#sentFd]) {
      try {
        closeSync(fd);
      } catch {
        // Closed already.
      }
    }
  }
}

/** What waits in a spool folder, read without opening it for writing (for `audit summary`). */
export function spoolPending(dir: string): { records: number; bytes: number } | undefined {
  let fd: number;
  try {
    fd = openSync(path.join(dir, 'queue'), 'r');
  } catch {
    return undefined;
  }
  try {
    const size = fstatSync(fd).size;
    const sent = Math.min(readOffset(path.join(dir, 'sent')), size);
    return { records: countLines(fd, sent, size), bytes: size - sent };
  } finally {
    closeSync(fd);
  }
}

function readOffset(file: string): number {
  try {
    const value = Number(readFileSync(file, 'utf8').trim());
    return Number.isSafeInteger(value) && value >= 0 ? value : 0;
  } catch {
    return 0;
  }
}

/**
 * The offset as 16 digits and a newline, written over the old one in place: always the same
 * length, so one small write replaces it whole (a crash leaves the old value or the new one).
 */
function writeOffset(fd: number, offset: number): void {
  writeSync(fd, `${String(offset).padStart(16, '0')}\n`, 0, 'utf8');
}

function countLines(fd: number, from: number, to: number): number {
  const buffer = Buffer.alloc(1 << 20);
  let count = 0;
  for (let pos = from; pos < to;) {
    const n = readSync(fd, buffer, 0, Math.min(buffer.length, to - pos), pos);
    if (n === 0) break;
    for (let i = buffer.indexOf(0x0a); i !== -1 && i < n; i = buffer.indexOf(0x0a, i + 1)) count++;
    pos += n;
  }
  return count;
}
