/**
 * Finds bytes below 0x20 (control characters), which JSON text may hold only as whitespace
 * between tokens (tab, CR, LF) and never raw inside a string. Checked a word (4 bytes) at a time:
 * a large result is mostly one long string, and this is the one check of it the gateway makes
 * in JavaScript (measured).
 */
export class ControlBytes {
  private readonly words: Int32Array;
  /** Bytes before the first 4-byte-aligned one: byte `i` starts word `(i - lead) / 4`. */
  private readonly lead: number;

  constructor(private readonly bytes: Buffer) {
    const aligned = (bytes.byteOffset + 3) & ~3;
    this.lead = aligned - bytes.byteOffset;
    this.words = new Int32Array(bytes.buffer, aligned, Math.max(0, (bytes.length - this.lead) >> 2));
  }

  /** Whether bytes [from, to) hold a byte below 0x20. */
  within(from: number, to: number): boolean {
    const { bytes, words, lead } = this;
    let i = from;
    while (i < to && ((i - lead) & 3) !== 0) if (bytes[i++]! < 0x20) return true;
    let w = (i - lead) >> 2;
    const wordsEnd = (to - lead) >> 2;
    // (x - 0x20202020) & ~x & 0x80808080 is non-zero exactly when some byte of x is below 0x20
    // (the classic "has a byte less than n" test, exact for n <= 128). Four words per round.
    for (; w + 4 <= wordsEnd; w += 4) {
      const x0 = words[w]!;
      const x1 = words[w + 1]!;
      const x2 = words[w + 2]!;
      const x3 = words[w + 3]!;
      const flagged =
        ((x0 - 0x20202020) & ~x0) |
        ((x1 - 0x20202020) & ~x1) |
        ((x2 - 0x20202020) & ~x2) |
        ((x3 - 0x20202020) & ~x3);
      if ((flagged & 0x80808080) !== 0) return true;
    }
    for (; w < wordsEnd; w++) {
      const x = words[w]!;
      if (((x - 0x20202020) & ~x & 0x80808080) !== 0) return true;
    }
    for (i = Math.max(i, wordsEnd * 4 + lead); i < to; i++) if (bytes[i]! < 0x20) return true;
    return false;
  }
}
