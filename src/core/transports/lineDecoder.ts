/**
 * Splits a byte stream into newline-delimited lines with a bound on line size.
 *
 * Why not the SDK's ReadBuffer: it closes the whole transport when one message exceeds
 * its 10 MiB limit. Here an oversize line is skipped and reported with
 * a little of its head and tail, so the owner can tell which request it answered and fail
 * only that one, keeping the connection.
 */

import { ByteParts } from '../../lib/byteParts.js';
import { ControlBytes } from '../../lib/json/controlBytes.js';
import type { LargeLineOptions } from './largeLine.js';

const NEWLINE = 0x0a;
/** How much of an oversize line is kept for the owner to identify it. */
const EDGE_BYTES = 256;

export interface OversizeLine {
  /** Total bytes of the skipped line (without the newline). */
  readonly bytes: number;
  readonly head: string;
  readonly tail: string;
}

/**
 * Lines of at least this many bytes go to `onLargeLine` as bytes: what is forwarded unchanged is
 * written from them, and their long strings need not be decoded at all (a 1 MiB result, measured).
 */
export const LARGE_LINE_BYTES = 64 * 1024;

export interface LineDecoderOptions {
  /** Lines longer than this many bytes are skipped and reported through `onOversize`. */
  readonly maxLineBytes: number;
  readonly onLine: (line: string) => void;
  /**
   * Lines of `LARGE_LINE_BYTES` or more, as bytes in the parts they arrived in (without this,
   * they are decoded for `onLine`), with what was learnt of them as they arrived.
   */
  readonly onLargeLine?: (bytes: ByteParts, facts: LargeLineOptions) => void;
  readonly onOversize: (info: OversizeLine) => void;
}

const CONTROL_FREE: LargeLineOptions = Object.freeze({ controlFree: true });
const UNKNOWN: LargeLineOptions = Object.freeze({});

export class LineDecoder {
  private readonly options: LineDecoderOptions;
  /** The parts of a line split across chunks (reused: one array per decoder, not per line). */
  private readonly pending: Buffer[] = [];
  private pendingBytes = 0;
  /**
   * Of a line that has grown large, how many parts were checked for control bytes, and whether
   * none was found: checked as the parts arrive, so that it is known when the line ends (measured).
   */
  private controlChecked = 0;
  private controlFree = true;
  /** Set while discarding the rest of an oversize line. */
  private oversize: { bytes: number; head: Buffer; tail: Buffer } | null = null;

  constructor(options: LineDecoderOptions) {
    this.options = options;
  }

  push(chunk: Buffer): void {
    let start = this.pendingBytes === 0 && this.oversize === null ? this.emitRun(chunk) : 0;
    for (;;) {
      const nl = chunk.indexOf(NEWLINE, start);
      if (nl === -1) {
        this.accumulate(chunk.subarray(start));
        return;
      }
      if (this.pendingBytes === 0 && this.oversize === null && nl - start <= this.options.maxLineBytes) {
        // The whole line is in this chunk (the usual case): decoded from the chunk itself, with
        // no slice or array per line (measured).
        this.emit(chunk, start, nl);
      } else {
        this.accumulate(chunk.subarray(start, nl));
        this.finishLine();
      }
      start = nl + 1;
    }
  }

  /**
   * The complete lines a chunk starts with, when it holds several and they are short together
   * (none of them can then be oversize or large): decoded as one string and cut there, one
   * decode per chunk rather than one per line (measured). The same text as decoding each line on
   * its own: a newline or a carriage return is never part of a UTF-8 sequence, so an invalid
   * sequence before one decodes alike either way. Returns where the lines it handled end.
   */
  private emitRun(chunk: Buffer): number {
    const last = chunk.lastIndexOf(NEWLINE);
    if (last < 1 || last >= LARGE_LINE_BYTES || last > this.options.maxLineBytes) return 0;
    // One line: decoded on its own by `push`, with no slice.
    if (chunk.indexOf(NEWLINE) === last) return 0;
    const text = chunk.toString('utf8', 0, last + 1);
    const { onLine } = this.options;
    let start = 0;
    for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', start)) {
      // Tolerate CRLF from servers written on Windows.
      const end = nl > start && text.charCodeAt(nl - 1) === 0x0d ? nl - 1 : nl;
      const line = text.slice(start, end);
      // A message starts with `{`: only a line that does not can be blank.
      if (text.charCodeAt(start) === 0x7b || line.trim() !== '') onLine(line);
      start = nl + 1;
    }
    return last + 1;
  }

  /** The stream ended: a last line without a newline still counts. */
  end(): void {
    if (this.pendingBytes > 0 || this.oversize !== null) this.finishLine();
  }

  private accumulate(part: Buffer): void {
    if (part.length === 0) return;
    if (this.oversize !== null) {
      this.trackOversize(part);
      return;
    }
    if (this.pendingBytes + part.length > this.options.maxLineBytes) {
      // Keep only the edges from here on; the middle of an oversize line is never buffered.
      this.pending.push(part);
      const soFar = Buffer.concat(this.pending, this.pendingBytes + part.length);
      this.clearPending();
      this.oversize = {
        bytes: soFar.length,
        head: Buffer.from(soFar.subarray(0, EDGE_BYTES)),
        tail: Buffer.from(soFar.subarray(Math.max(0, soFar.length - EDGE_BYTES))),
      };
      return;
    }
    this.pending.push(part);
    this.pendingBytes += part.length;
    if (this.pendingBytes >= LARGE_LINE_BYTES) this.checkControl();
  }

  private checkControl(): void {
    const { pending } = this;
    while (this.controlFree && this.controlChecked < pending.length) {
      const part = pending[this.controlChecked++]!;
      this.controlFree = !new ControlBytes(part).within(0, part.length);
    }
  }

  private trackOversize(part: Buffer): void {
    const state = this.oversize!;
    state.bytes += part.length;
    const joined = part.length >= EDGE_BYTES ? part : Buffer.concat([state.tail, part]);
    state.tail = Buffer.from(joined.subarray(Math.max(0, joined.length - EDGE_BYTES)));
  }

  private finishLine(): void {
    if (this.oversize !== null) {
      const { bytes, head, tail } = this.oversize;
      this.oversize = null;
      this.options.onOversize({ bytes, head: head.toString('utf8'), tail: tail.toString('utf8') });
      return;
    }
    if (this.pendingBytes === 0) return;
    const { pending } = this;
    const facts = this.controlChecked === pending.length && this.controlFree ? CONTROL_FREE : UNKNOWN;
    if (this.pendingBytes > LARGE_LINE_BYTES && this.options.onLargeLine !== undefined) {
      // Handed on as the parts it arrived in, never joined (see ByteParts).
      const bytes = new ByteParts(pending.slice());
      this.clearPending();
      this.emitLarge(bytes, facts);
      return;
    }
    const bytes = pending.length === 1 ? pending[0]! : Buffer.concat(pending, this.pendingBytes);
    this.clearPending();
    this.emit(bytes, 0, bytes.length, facts);
  }

  private clearPending(): void {
    this.pending.length = 0;
    this.pendingBytes = 0;
    this.controlChecked = 0;
    this.controlFree = true;
  }

  /** Hands on the line in `buffer` from `start` to `end` (its newline). */
  private emit(buffer: Buffer, start: number, end: number, facts: LargeLineOptions = UNKNOWN): void {
    // Tolerate CRLF from servers written on Windows.
    if (end > start && buffer[end - 1] === 0x0d) end--;
    if (end - start < LARGE_LINE_BYTES || this.options.onLargeLine === undefined) {
      const line = buffer.toString('utf8', start, end);
      // A message starts with `{`: only a line that does not can be blank.
      if (buffer[start] === 0x7b || line.trim() !== '') this.options.onLine(line);
      return;
    }
    this.options.onLargeLine(
      ByteParts.of(start === 0 && end === buffer.length ? buffer : buffer.subarray(start, end)),
      facts,
    );
  }

  /** Hands on a large line held in parts (more than LARGE_LINE_BYTES, its newline left out). */
  private emitLarge(bytes: ByteParts, facts: LargeLineOptions): void {
    const end = bytes.at(bytes.length - 1) === 0x0d ? bytes.length - 1 : bytes.length;
    this.options.onLargeLine!(bytes.range(0, end), facts);
  }
}
