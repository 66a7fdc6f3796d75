/**
 * A large message line (LARGE_LINE_BYTES or more), parsed without decoding and parsing the long
 * strings in it (a 1 MiB result, measured).
 *
 * Why: a large result is almost always one long string (a file's text, a base64 image) that the
 * gateway forwards from the upstream's own bytes and never reads. Decoding it to text and having
 * `JSON.parse` copy it into a new string cost about 2.5 ms a MiB here, plus the garbage. Instead,
 * each long string is checked where it lies in the bytes (the checks `JSON.parse` would make of a
 * string: no raw control characters, valid escapes) and replaced by a short placeholder in the
 * text that is parsed. After parsing, each placeholder becomes a property that decodes its
 * string from the bytes when something first reads it (policy, repair, a log of results), so
 * every reader still sees exactly what `JSON.parse` of the whole line would have given.
 *
 * Whenever the shortcut does not clearly pay (many short strings, dense escapes, anything not
 * valid), the whole line is decoded and parsed as before: same result, same error messages.
 */

import { isAscii, isUtf8 } from 'node:buffer';
import { ByteParts } from '../../lib/byteParts.js';
import { ControlBytes } from '../../lib/json/controlBytes.js';
import { parseMessage, type JsonRpcMessage, type ParseFailure } from '../protocol/jsonRpc.js';
import type { LargeLine } from '../rpc/rawResult.js';

/** Strings at least this long (in bytes, between the quotes) are left in the bytes. */
export const LONG_STRING_BYTES = 1024;

/** Short strings tolerated before the first long one; more are allowed per byte of long string. */
const SHORT_STRINGS_FREE = 256;
/**
 * Escapes tolerated in a long string, plus 1 per 2^ESCAPE_SPACING_SHIFT bytes of it. Measured: at one
 * escaped quote per 16 bytes this scan costs what parsing the whole line does (escaped newlines
 * cost half as much); source code has about one escape per 40 bytes, where it is 6 times faster.
 */
const ESCAPES_FREE = 64;
const ESCAPE_SPACING_SHIFT = 4;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Marks a placeholder in the parsed text. A NUL cannot appear in JSON text unescaped, and a peer
 * writing this exact string can only get another of its own strings from the same line.
 */
const MARK = '\u0000mcp-warden:long-string:';
const MARK_JSON = JSON.stringify(MARK).slice(0, -1);

export interface LargeLineOptions {
  /**
   * The line is known to hold no byte below 0x20 (the line decoder checks the parts of a line as
   * they arrive, while the rest is on its way), so its strings need not be checked for them.
   */
  readonly controlFree?: boolean;
}

export type LargeParseOutcome =
  { ok: true; message: JsonRpcMessage; large: LargeLine } | (ParseFailure & { text: string });

/**
 * Parses a large line as `parseMessage` parses any line, with the same outcome (the same value
 * for every reader, the same reason when it is not a message), its long strings left in the bytes.
 */
export function parseLargeMessage(
  line: Buffer | ByteParts,
  options: LargeLineOptions = {},
): LargeParseOutcome {
  const bytes = line instanceof ByteParts ? line : ByteParts.of(line);
  const elided = ElidedLine.from(bytes, options);
  if (elided !== null) {
    const parsed = parseMessage(elided.text);
    if (parsed.ok) {
      elided.restore(parsed.message);
      return { ok: true, message: parsed.message, large: elided };
    }
    // Whatever is wrong is reported as for any line: from the whole text, below.
  }
  const whole = new WholeLine(bytes);
  const parsed = parseMessage(whole.text);
  return parsed.ok ? { ok: true, message: parsed.message, large: whole } : { ...parsed, text: whole.text };
}

/** The line decoded as a whole: what every line was before (and the fallback). */
export class WholeLine implements LargeLine {
  readonly whole = true;
  readonly text: string;
  readonly bytes: ByteParts;
  private readonly ascii: boolean;
  /** Found only if something cuts from the bytes: most large lines are never cut. */
  private utf8: boolean | undefined;

  constructor(line: Buffer | ByteParts) {
    this.bytes = line instanceof ByteParts ? line : ByteParts.of(line);
    // A copy for decoding only, not kept: the line stays held as its parts, and the copy, young
    // and garbage once decoded, is freed by the next scavenge (parsing the text makes one).
    // Kept in the parts' place, it lived as long as the line, beside the parts, which arrived
    // over time and so are mostly in the old generation, freed only by a full collection: with a
    // list of 10,000 tools that raised the peak resident size by 2.6 MB (bench/listRss.mjs).
    const joined = this.bytes.copy();
    // Plain ASCII (almost every large line) decodes as latin1: the same text, made faster.
    this.ascii = isAscii(joined);
    this.text = this.ascii ? joined.toString('latin1') : joined.toString('utf8');
  }

  get offsetsExact(): boolean {
    return this.ascii || (this.utf8 ??= isUtf8(this.bytes.slice()));
  }

  byteOffset(index: number): number {
    // Same length in bytes and characters: all ASCII, so the offsets are the same too.
    return this.bytes.length === this.text.length ? index : Buffer.byteLength(this.text.slice(0, index));
  }

  restore(): void {}
}

class ElidedLine implements LargeLine {
  readonly whole = false;
  /** Always: a line whose text between long strings is not valid UTF-8 is read whole instead. */
  readonly offsetsExact = true;

  private constructor(
    readonly bytes: ByteParts,
    readonly text: string,
    /** Per long string: byte offset of its opening quote, and just past its closing quote. */
    private readonly byteStarts: readonly number[],
    private readonly byteEnds: readonly number[],
    /** Per long string: whether it has escapes (then JSON.parse decodes it; else a plain decode). */
    private readonly escaped: readonly boolean[],
    /** Per long string: where its placeholder starts and ends in `text`. */
    private readonly textStarts: readonly number[],
    private readonly textEnds: readonly number[],
  ) {}

  static from(bytes: ByteParts, options: LargeLineOptions): ElidedLine | null {
    const scan = findLongStrings(bytes, options);
    if (scan === null) return null;
    const { starts, ends } = scan;
    const textStarts: number[] = [];
    const textEnds: number[] = [];
    let text = '';
    let from = 0;
    for (let k = 0; k <= starts.length; k++) {
      const to = k < starts.length ? starts[k]! : bytes.length;
      // Offsets within these parts are measured in their text (see byteOffset).
      const between = bytes.slice(from, to);
      if (!isUtf8(between)) return null;
      text += between.toString('utf8');
      if (k === starts.length) break;
      textStarts.push(text.length);
      text += `${MARK_JSON}${k}"`;
      textEnds.push(text.length);
      from = ends[k]!;
    }
    return new ElidedLine(bytes, text, starts, ends, scan.escaped, textStarts, textEnds);
  }

  byteOffset(index: number): number {
    const { textStarts, textEnds } = this;
    let k = textStarts.length - 1;
    while (k >= 0 && textStarts[k]! > index) k--;
    if (k < 0) return Buffer.byteLength(this.text.slice(0, index));
    if (index === textStarts[k]) return this.byteStarts[k]!;
    if (index < textEnds[k]!) throw new Error(`offset ${index} is inside the placeholder of a long string`);
    return this.byteEnds[k]! + Buffer.byteLength(this.text.slice(textEnds[k], index));
  }

  restore(parsed: unknown): void {
    let left = this.byteStarts.length;
    const stack: unknown[] = [parsed];
    // Stops as soon as every placeholder is found: usually after a handful of objects.
    while (left > 0 && stack.length > 0) {
      const node = stack.pop();
      if (typeof node !== 'object' || node === null) continue;
      if (Array.isArray(node)) {
        for (let i = 0; i < node.length; i++) left -= this.visit(node, i, node[i], stack);
      } else {
        for (const key of Object.keys(node))
          left -= this.visit(node, key, (node as Record<string, unknown>)[key], stack);
      }
    }
  }

  /** 1 when `value` (at `holder[key]`) is a placeholder, now made lazy; objects go on `stack`. */
  private visit(holder: object, key: string | number, value: unknown, stack: unknown[]): number {
    if (typeof value === 'object' && value !== null) stack.push(value);
    if (typeof value !== 'string' || !value.startsWith(MARK)) return 0;
    const k = Number(value.slice(MARK.length));
    if (!Number.isInteger(k) || k < 0 || k >= this.byteStarts.length) return 0;
    this.defineLazy(holder, key, k);
    return 1;
  }

  /** The string `k` exactly as JSON.parse of the whole line would give it. */
  private decode(k: number): string {
    const start = this.byteStarts[k]!;
    const end = this.byteEnds[k]!;
    if (this.escaped[k]) return JSON.parse(this.bytes.toString('utf8', start, end)) as string;
    return this.bytes.toString('utf8', start + 1, end - 1);
  }

  /**
   * Makes `holder[key]` decode string `k` when first read, then become a plain data property.
   * Assigning to it first simply replaces it, as for any parsed value.
   */
  private defineLazy(holder: object, key: string | number, k: number): void {
    const become = (value: unknown): void => {
      Object.defineProperty(holder, key, { value, writable: true, enumerable: true, configurable: true });
    };
    let decoded: string | undefined;
    Object.defineProperty(holder, key, {
      enumerable: true,
      configurable: true,
      get: () => {
        decoded ??= this.decode(k);
        // A holder frozen since (nothing here does that) keeps the accessor; the text is cached.
        if (Object.isExtensible(holder)) become(decoded);
        return decoded;
      },
      set: become,
    });
  }
}

/** Where the long strings of a line are, or null when leaving them out does not pay or is unsafe. */
interface LongStrings {
  readonly starts: number[];
  readonly ends: number[];
  readonly escaped: boolean[];
}

function findLongStrings(bytes: ByteParts, options: LargeLineOptions): LongStrings | null {
  const checker = new StringBodyChecker(bytes, options.controlFree === true);
  const starts: number[] = [];
  const ends: number[] = [];
  const escaped: boolean[] = [];
  let shortStrings = 0;
  let longBytes = 0;
  let i = 0;
  for (;;) {
    // Outside strings, a quote can only open one: JSON has no other use for it.
    const open = bytes.indexOf(QUOTE, i);
    if (open === -1) break;
    const close = closingQuote(bytes, open + 1);
    if (close === -1) return null;
    const length = close - open - 1;
    if (length >= LONG_STRING_BYTES && !isKey(bytes, close + 1)) {
      const escapes = checker.escapes(open + 1, close);
      if (escapes === -1) return null;
      starts.push(open);
      ends.push(close + 1);
      escaped.push(escapes > 0);
      longBytes += length;
    } else if (++shortStrings > SHORT_STRINGS_FREE + longBytes / 128) {
      // Mostly short strings (a long listing): JSON.parse handles those faster than this scan.
      return null;
    }
    i = close + 1;
  }
  return starts.length === 0 ? null : { starts, ends, escaped };
}

/**
 * The index of the quote closing the string whose body starts at `from`; -1 when there is none,
 * or when so many quotes inside are escaped that parsing the whole line is the cheaper way.
 */
function closingQuote(bytes: ByteParts, from: number): number {
  let escapedQuotes = 0;
  let i = from;
  for (;;) {
    const q = bytes.indexOf(QUOTE, i);
    if (q === -1) return -1;
    // An odd number of backslashes just before the quote escapes it.
    let b = q - 1;
    while (b >= from && bytes.at(b) === BACKSLASH) b--;
    if ((q - 1 - b) % 2 === 0) return q;
    if (++escapedQuotes > ESCAPES_FREE + ((q - from) >> ESCAPE_SPACING_SHIFT)) return -1;
    i = q + 1;
  }
}

/** Whether the string ending just before `i` is an object key (a colon follows it). */
function isKey(bytes: ByteParts, i: number): boolean {
  for (; i < bytes.length; i++) {
    const c = bytes.at(i)!;
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d && c !== 0x0a) return c === 0x3a;
  }
  return false;
}

/** Checks string bodies as JSON.parse would. */
class StringBodyChecker {
  /** Per part, made when a string in it is first checked; null when the check is skipped. */
  private readonly control: (ControlBytes | undefined)[] | null;
  /** The next backslash at or after where the last search started (-1: none left). */
  private nextBackslash = -2;

  /** `controlFree`: the line is known to hold no byte below 0x20, so that check is skipped. */
  constructor(
    private readonly bytes: ByteParts,
    controlFree: boolean,
  ) {
    this.control = controlFree ? null : [];
  }

  /** Whether bytes [from, to) hold a byte below 0x20. */
  private hasControl(from: number, to: number): boolean {
    const { control } = this;
    if (control === null) return false;
    return this.bytes.some(from, to, (part, start, end, k) =>
      (control[k] ??= new ControlBytes(part)).within(start, end),
    );
  }

  /**
   * The number of escapes in the string body [from, to): -1 when it has a raw control character
   * or an invalid escape (JSON.parse will say so), or escapes too dense for leaving it out to pay.
   */
  escapes(from: number, to: number): number {
    const budget = ESCAPES_FREE + ((to - from) >> ESCAPE_SPACING_SHIFT);
    let count = 0;
    let i = from;
    for (;;) {
      // One search for backslashes serves every string until it is passed (no rescans).
      if (this.nextBackslash !== -1 && this.nextBackslash < i)
        this.nextBackslash = this.bytes.indexOf(BACKSLASH, i);
      const stop = this.nextBackslash === -1 || this.nextBackslash >= to ? to : this.nextBackslash;
      if (this.hasControl(i, stop)) return -1;
      if (stop === to) return count;
      i = escapeEnd(this.bytes, stop, to);
      if (i === -1 || ++count > budget) return -1;
    }
  }
}

const HEX = /^[0-9a-fA-F]{4}$/;

/** Just past the escape starting at `at` (a backslash), or -1 when it is not a JSON escape. */
function escapeEnd(bytes: ByteParts, at: number, to: number): number {
  if (at + 1 >= to) return -1;
  switch (bytes.at(at + 1)) {
    case 0x22: // "
    case 0x5c: // \
    case 0x2f: // /
    case 0x62: // b
    case 0x66: // f
    case 0x6e: // n
    case 0x72: // r
    case 0x74: // t
      return at + 2;
    case 0x75: // u
      return at + 6 <= to && HEX.test(bytes.toString('latin1', at + 2, at + 6)) ? at + 6 : -1;
    default:
      return -1;
  }
}
