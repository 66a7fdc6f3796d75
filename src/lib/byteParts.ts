/**
 * Bytes held as the buffers they arrived in, read as one run of bytes.
 *
 * Why: a large message arrives from a pipe in parts of 64 KiB. Joining them into one buffer
 * copied every byte once more and allocated as much again for each message (about a third of a
 * millisecond per MiB here, plus the garbage), only for the bytes to be written on unchanged. The
 * parts are searched where they lie, a range of them is a list of views, and a copy is made
 * only of what must be contiguous: the short stretches decoded to text, or the whole when a
 * reader asks for it.
 */

import { isAscii } from 'node:buffer';

export class ByteParts {
  /** Total bytes. */
  readonly length: number;
  /** The offset of each part's first byte. */
  private starts: number[];
  /** The part the last lookup landed in: searches move forward, so the next is usually there. */
  private last = 0;
  private joined: Buffer | undefined;

  /** `parts` is kept as given (not copied): the caller hands it over. */
  constructor(private parts: readonly Buffer[]) {
    const starts: number[] = [];
    let length = 0;
    for (const part of parts) {
      starts.push(length);
      length += part.length;
    }
    this.starts = starts;
    this.length = length;
    if (parts.length === 1) this.joined = parts[0];
  }

  static of(buffer: Buffer): ByteParts {
    return new ByteParts([buffer]);
  }

  /** The parts, in order: what a vectored write writes. */
  get buffers(): readonly Buffer[] {
    return this.parts;
  }

  /** The index of the part holding byte `i` (0 <= i < length). */
  private partOf(i: number): number {
    const { starts } = this;
    let k = this.last;
    while (k > 0 && starts[k]! > i) k--;
    while (k + 1 < starts.length && starts[k + 1]! <= i) k++;
    this.last = k;
    return k;
  }

  /** The byte at `i`; undefined outside the bytes. */
  at(i: number): number | undefined {
    if (i < 0 || i >= this.length) return undefined;
    const k = this.partOf(i);
    return this.parts[k]![i - this.starts[k]!];
  }

  /** The offset of the first `byte` at or after `from`, or -1. */
  indexOf(byte: number, from: number): number {
    if (from >= this.length) return -1;
    const { parts, starts } = this;
    for (let k = this.partOf(Math.max(0, from)); k < parts.length; k++) {
      const start = starts[k]!;
      const found = parts[k]!.indexOf(byte, Math.max(0, from - start));
      if (found !== -1) {
        this.last = k;
        return start + found;
      }
    }
    return -1;
  }

  /**
   * Calls `visit` with each part's share of [from, to) (the part, where the share starts and ends
   * in it, and the part's index), in order, until it returns true.
   */
  some(
    from: number,
    to: number,
    visit: (part: Buffer, start: number, end: number, index: number) => boolean,
  ): boolean {
    if (from >= to) return false;
    const { parts, starts } = this;
    for (let k = this.partOf(from); k < parts.length && starts[k]! < to; k++) {
      const start = starts[k]!;
      const part = parts[k]!;
      if (visit(part, Math.max(0, from - start), Math.min(part.length, to - start), k)) return true;
    }
    return false;
  }

  /** Bytes [from, to) as views of the parts (no copy). */
  range(from: number, to: number): ByteParts {
    if (from === 0 && to === this.length) return this;
    const views: Buffer[] = [];
    this.some(from, to, (part, start, end) => {
      views.push(start === 0 && end === part.length ? part : part.subarray(start, end));
      return false;
    });
    return new ByteParts(views);
  }

  /** Bytes [from, to) in one buffer: a view when they lie in one part, else a copy. */
  slice(from = 0, to = this.length): Buffer {
    if (this.joined !== undefined) return this.joined.subarray(from, to);
    const k = this.partOf(from);
    const start = this.starts[k]!;
    const part = this.parts[k]!;
    if (to - start <= part.length) return part.subarray(from - start, to - start);
    if (from === 0 && to === this.length) {
      // Joined once, and then held only joined: a large list's line is kept while it is the
      // latest, and holding both its parts and their copy raised the peak resident size.
      const joined = Buffer.concat(this.parts, this.length);
      this.parts = [joined];
      this.starts = [0];
      this.last = 0;
      return (this.joined = joined);
    }
    return Buffer.concat(this.range(from, to).parts, to - from);
  }

  /**
   * All the bytes in one buffer, not kept: a copy when there are several parts (the parts stay as
   * they are). For a reader that needs them contiguous once, briefly.
   */
  copy(): Buffer {
    return this.joined ?? Buffer.concat(this.parts, this.length);
  }

  /** The bytes decoded; plain ASCII (almost every large message) decodes as latin1, faster. */
  toString(encoding: 'utf8' | 'latin1' = 'utf8', from = 0, to = this.length): string {
    const bytes = this.slice(from, to);
    return encoding === 'utf8' && !isAscii(bytes) ? bytes.toString('utf8') : bytes.toString('latin1');
  }
}
