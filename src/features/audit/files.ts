import { constants as bufferConstants, isUtf8 } from 'node:buffer';
import { closeSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * The files of an audit log, oldest first: `base.N`, ..., `base.2`, `base.1`, `base` (rotation
 * renames `base` to `base.1` and shifts the others up). Numbers missing in between are
 * returned in `missing` so a reader can say a rotated file was removed. `base` itself is
 * included only if it exists.
 */
export function auditFileSet(base: string): { files: string[]; missing: string[] } {
  const dir = path.dirname(base);
  const name = path.basename(base);
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return { files: [], missing: [] };
  }
  const numbers: number[] = [];
  for (const entry of entries) {
    if (!entry.startsWith(`${name}.`)) continue;
    const suffix = entry.slice(name.length + 1);
    if (/^[1-9][0-9]{0,8}$/.test(suffix)) numbers.push(Number(suffix));
  }
  numbers.sort((a, b) => b - a);
  const files = numbers.map((n) => `${base}.${n}`);
  const missing: string[] = [];
  const highest = numbers[0] ?? 0;
  const present = new Set(numbers);
  for (let n = highest - 1; n >= 1; n--) if (!present.has(n)) missing.push(`${base}.${n}`);
  if (statSync(base, { throwIfNoEntry: false }) !== undefined) files.push(base);
  return { files, missing };
}

/** A line of a file: its text (without the newline), 1-based number, and whether a newline ended it. */
export interface FileLine {
  readonly text: string;
  readonly number: number;
  readonly terminated: boolean;
  /**
   * Whether the line's bytes are valid UTF-8. Invalid bytes decode to U+FFFD in `text`, so text
   * alone cannot tell one invalid sequence from another, or from a U+FFFD that was written.
   */
  readonly utf8: boolean;
}

const CHUNK = 1 << 20;

/**
 * A line longer than Node can hold as text: no gateway wrote it (a record is built as one
 * string), and reading on would only gather it all in memory to fail there.
 */
export class LineTooLongError extends Error {
  override readonly name = 'LineTooLongError';
  constructor(
    readonly line: number,
    readonly maxBytes: number,
  ) {
    super(
      `line ${line} is longer than ${maxBytes} bytes, the longest text Node can hold, so no gateway wrote it`,
    );
  }
}

/**
 * The lines of a file, read in 1 MiB chunks so a large unrotated log never has to fit in one
 * string (V8 caps strings at about 512 MiB). A final piece without a newline is yielded with
 * `terminated: false`; an empty final piece (the file ends with a newline) is not yielded.
 * Throws for a file that is not a regular file, and `LineTooLongError` past `maxLineBytes`
 * (V8's longest string unless told otherwise) without a newline.
 */
export function* readLinesSync(
  file: string,
  options: { readonly maxLineBytes?: number } = {},
): Generator<FileLine> {
  const maxLineBytes = options.maxLineBytes ?? bufferConstants.MAX_STRING_LENGTH;
  // A name that leads (through a symlink, say) to a FIFO, a device or a folder is no audit
  // file: opening a FIFO waits for a writer, and a device such as /dev/zero never ends.
  if (!statSync(file).isFile()) throw new Error('not a regular file (a FIFO, device or folder)');
  const fd = openSync(file, 'r');
  try {
    const buffer = Buffer.allocUnsafe(CHUNK);
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let number = 0;
    for (;;) {
      const n = readSync(fd, buffer, 0, CHUNK, null);
      if (n === 0) break;
      let start = 0;
      for (let i = buffer.indexOf(0x0a, 0); i !== -1 && i < n; i = buffer.indexOf(0x0a, i + 1)) {
        if (pendingBytes + (i - start) > maxLineBytes) throw new LineTooLongError(number + 1, maxLineBytes);
        pending.push(Buffer.from(buffer.subarray(start, i)));
        number++;
        const bytes = Buffer.concat(pending);
        yield { text: bytes.toString('utf8'), number, terminated: true, utf8: isUtf8(bytes) };
        pending = [];
        pendingBytes = 0;
        start = i + 1;
      }
      if (start < n) {
        pendingBytes += n - start;
        if (pendingBytes > maxLineBytes) throw new LineTooLongError(number + 1, maxLineBytes);
        pending.push(Buffer.from(buffer.subarray(start, n)));
      }
    }
    if (pending.length > 0) {
      number++;
      const bytes = Buffer.concat(pending);
      yield { text: bytes.toString('utf8'), number, terminated: false, utf8: isUtf8(bytes) };
    }
  } finally {
    closeSync(fd);
  }
}
