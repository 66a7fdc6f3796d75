import { writeSync } from 'node:fs';
import { SEAL_SUFFIX_BYTES, sealSuffix, type ChainHead } from './chain.js';
import { sha256HexOfBytes } from '../../lib/hash.js';

/*
 * The hash chain as the writer extends it: each record's line is sealed where it lies in the
 * write being assembled, as the record after the writer's chain head (see chain.ts for the seal,
 * auditWriter.ts for why chains are per writer).
 */

/**
 * A record's text before its `hash` member: the chain fields around the caller's `members`,
 * `seq` and `ts` first for people reading the file, then the writer's own members and `prev`.
 * The verifier rebuilds a checkpoint's line with it (verifyCheckpoints.ts), so the two agree.
 */
export function openRecordText(
  seq: number,
  ts: string,
  members: string,
  writerMembers: string,
  prev: string,
): string {
  const fields = members === '' ? '' : `${members},`;
  return `{"seq":${seq},"ts":"${ts}",${fields}${writerMembers},"prev":"${prev}"`;
}

/** A writer's own members of every record it writes: the host it runs on and its id, as JSON. */
export function writerMembersText(host: unknown, writer: unknown): string {
  return `"host":${JSON.stringify(host)},"writer":${JSON.stringify(writer)}`;
}

/** `,"session":...` for a writer given a session, or empty. */
export function sessionMemberText(session: unknown): string {
  return session === undefined ? '' : `,"session":${JSON.stringify(session)}`;
}

/**
 * Appends to `batch` the line of a record whose fields are `members` (JSON object members, see
 * RecordFields) as the record after `head` in a writer's chain; returns the new head.
 * `writerMembers`: the writer's own members (`"host":...,"writer":...`).
 */
export function sealLine(
  batch: LineBatch,
  head: ChainHead,
  ts: string,
  members: string,
  writerMembers: string,
): ChainHead {
  const seq = head.seq + 1;
  const hash = batch.sealOpen(openRecordText(seq, ts, members, writerMembers, head.hash));
  return { seq, hash };
}

/** A write(2) that wrote only part of its data (a full disk, or a signal mid-write). */
export class ShortWrite extends Error {
  readonly code = 'SHORT_WRITE';
  /** Bytes of the records' text that went in (a leading newline not counted). */
  readonly textBytes: number;

  constructor(written: number, length: number, textBytes: number) {
    super(`SHORT_WRITE: wrote ${written} of ${length} bytes (disk full?)`);
    this.textBytes = textBytes;
  }
}

/** A batch buffer grown past this for one large write is not kept for the next. */
const BATCH_KEPT_BYTES = 1024 * 1024;

/**
 * The lines of one write(2), assembled as UTF-8 in one buffer: each record's text is encoded
 * once, hashed where it lies and written from there, where the text of a batch used to be
 * encoded for the hash, counted for its length and encoded again for the write (measured: about
 * half of the sealing and writing cost of a record). The first byte is kept for a newline.
 */
export class LineBatch {
  #buffer: Buffer = Buffer.allocUnsafe(64 * 1024);
  /**
   * Where the buffer's bytes lie, for the view each record is hashed from. Buffer's own
   * `subarray` and `write`, read off the buffer per record, were property loads the optimizing
   * compiler left generic (about a thousand instructions per call, counted): `write` is taken
   * once below, and the view is made from these two without a method.
   */
  #memory: ArrayBufferLike = this.#buffer.buffer;
  #offset = this.#buffer.byteOffset;
  /** Bytes of lines, after the reserved first byte. */
  bytes = 0;

  clear(): void {
    this.bytes = 0;
    if (this.#buffer.length > BATCH_KEPT_BYTES) this.#use(Buffer.allocUnsafe(64 * 1024));
  }

  /** Appends `open` + the hash member + `"}` + newline; returns the hash (see `sealOpenRecord`). */
  sealOpen(open: string): string {
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    this.#reserve(open.length * 3 + SEAL_SUFFIX_BYTES);
    const buffer = this.#buffer;
    const start = 1 + this.bytes;
    const end = start + writeString.call(buffer, open, start, 'utf8');
    const hash = sha256HexOfBytes(new Uint8Array(this.#memory, this.#offset + start, end - start));
    const sealed = end + writeString.call(buffer, sealSuffix(hash), end, 'latin1');
    this.bytes = sealed - 1;
    return hash;
  }

  /**
   * Writes the lines before `mark` with `write` (which clears the batch), then keeps the lines
   * from `mark` on as the batch's only ones.
   */
  moveTail(mark: number, write: () => void): void {
    const tail = Buffer.from(this.#buffer.subarray(1 + mark, 1 + this.bytes));
    this.bytes = mark;
    write();
    this.#reserve(tail.length);
    tail.copy(this.#buffer, 1);
    this.bytes = tail.length;
  }

  /**
   * Writes the lines to `fd` with one write(2), a newline in front of them when asked; returns
   * the bytes written. From the buffer itself, at an offset: no view of it is made per write.
   */
  writeTo(fd: number, newline: boolean): number {
    if (newline) this.#buffer[0] = 0x0a;
    return writeSync(fd, this.#buffer, newline ? 0 : 1, this.bytes + (newline ? 1 : 0), null);
  }

  /** The lines as text (for the shippers and an output other than the file). */
  text(): string {
    return this.#buffer.toString('utf8', 1, 1 + this.bytes);
  }

  /** Whether the first `bytes` bytes of the lines end at the end of a line. */
  isLineEnd(bytes: number): boolean {
    return this.#buffer[bytes] === 0x0a;
  }

  #reserve(more: number): void {
    const needed = 1 + this.bytes + more;
    if (needed <= this.#buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(needed, this.#buffer.length * 2));
    this.#buffer.copy(grown, 0, 0, 1 + this.bytes);
    this.#use(grown);
  }

  #use(buffer: Buffer): void {
    this.#buffer = buffer;
    this.#memory = buffer.buffer;
    this.#offset = buffer.byteOffset;
  }
}

/** `Buffer.prototype.write`, taken once (see `LineBatch.#memory`). */
const writeString = Buffer.prototype.write;
