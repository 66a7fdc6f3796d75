import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { chainHeadOf, type ChainHead } from './chain.js';

/** How far back from the end of a file to look for the last record when starting a chain. */
const MAX_TAIL_SCAN = 64 * 1024 * 1024;

/**
 * The last record of `file` (see `lastRecordInFd`). `empty`: the file is missing or has no bytes.
 */
export function lastRecordIn(file: string): TailScan {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return { empty: statSync(file, { throwIfNoEntry: false }) === undefined };
  }
  try {
    return lastRecordInFd(fd);
  } finally {
    closeSync(fd);
  }
}

export interface TailScan {
  readonly head?: ChainHead;
  readonly empty: boolean;
  /** The file ends with a line cut short; `ts` is the cut record's time when it got that far. */
  readonly torn?: { readonly ts?: string };
}

export function endsWithNewline(fd: number, size: number): boolean {
  const byte = Buffer.alloc(1);
  try {
    readSync(fd, byte, 0, 1, size - 1);
  } catch {
    return true; // cannot tell: assume whole lines
  }
  return byte[0] === 0x0a;
}

/**
 * The last record of an open file, read backwards in chunks with positioned reads (the offset
 * is untouched). Only `seq` and `hash` are needed to continue the chain, so the record's own
 * hash is not checked here (verify does that). Complete lines that do not parse are skipped. A
 * last line without a newline is a torn write (reported in `torn`) unless it parses as a whole
 * record: a write cut right before its newline lost nothing.
 */
export function lastRecordInFd(fd: number): TailScan {
  const stat = fstatSync(fd);
  if (!stat.isFile()) return { empty: true };
  const size = stat.size;
  if (size === 0) return { empty: true };
  const chunkSize = 64 * 1024;
  let pos = size;
  // Bytes from `pos` up to the earliest newline seen so far (or everything read, before one).
  let carry = Buffer.alloc(0);
  let seenNewline = false;
  let torn: { ts?: string } | undefined;
  const tryLine = (line: Buffer): ChainHead | undefined => {
    try {
      return chainHeadOf(JSON.parse(line.toString('utf8')));
    } catch {
      return undefined;
    }
  };
  /** The piece after the last newline: a whole record, nothing, or a torn one. */
  const tail = (piece: Buffer): ChainHead | undefined => {
    if (piece.length === 0) return undefined;
    const head = tryLine(piece);
    if (head === undefined) torn = { ...tornTime(piece) };
    return head;
  };
  while (pos > 0 && size - pos < MAX_TAIL_SCAN) {
    const n = Math.min(chunkSize, pos);
    pos -= n;
    const chunk = Buffer.alloc(n);
    readSync(fd, chunk, 0, n, pos);
    const buffer = Buffer.concat([chunk, carry]);
    let end = buffer.length;
    for (
      let i = buffer.lastIndexOf(0x0a, end - 1);
      i !== -1;
      i = i > 0 ? buffer.lastIndexOf(0x0a, i - 1) : -1
    ) {
      const head = seenNewline ? tryLine(buffer.subarray(i + 1, end)) : tail(buffer.subarray(i + 1, end));
      if (head !== undefined) return { head, empty: false, ...(torn && { torn }) };
      seenNewline = true;
      end = i;
    }
    carry = buffer.subarray(0, end);
  }
  if (pos === 0) {
    const head = seenNewline ? tryLine(carry) : tail(carry);
    if (head !== undefined) return { head, empty: false, ...(torn && { torn }) };
  }
  return { empty: false, ...(torn && { torn }) };
}

/** The `ts` of a cut record line, when the cut came after it (it is the line's second member). */
function tornTime(piece: Buffer): { ts?: string } {
  const match = /^\{"seq":\d+,"ts":"([0-9T:.Z-]{10,40})"/.exec(piece.subarray(0, 80).toString('latin1'));
  return match?.[1] === undefined ? {} : { ts: match[1] };
}
