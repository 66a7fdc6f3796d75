/**
 * A minimal scanner over the text of one JSON object, used where `JSON.parse` loses what we
 * must keep: integer ids above 2^53 (parse rounds them) and, on the hot path, the exact text of
 * a member we forward unchanged. Assumes the text already parsed as JSON; it only finds spans.
 */

import type { LargeLine } from '../transports/largeLine.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Index just past the closing quote of the string starting at `start` (which is a quote). */
function skipString(text: string, start: number): number {
  let i = start + 1;
  for (;;) {
    const q = text.indexOf('"', i);
    if (q === -1) return text.length;
    // Count the backslashes before the quote: an odd number escapes it.
    let b = q - 1;
    while (b >= i && text.charCodeAt(b) === BACKSLASH) b--;
    if ((q - 1 - b) % 2 === 0) return q + 1;
    i = q + 1;
  }
}

function skipWhitespace(text: string, i: number): number {
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
    i++;
  }
  return i;
}

/** Index just past the JSON value starting at `start`. */
function skipValue(text: string, start: number): number {
  const first = text.charCodeAt(start);
  if (first === QUOTE) return skipString(text, start);
  if (first === 0x7b || first === 0x5b) {
    let depth = 0;
    let i = start;
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === QUOTE) {
        i = skipString(text, i);
        continue;
      }
      if (c === 0x7b || c === 0x5b) depth++;
      else if (c === 0x7d || c === 0x5d) {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
    return text.length;
  }
  // number, true, false, null: up to the next delimiter.
  let i = start;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x2c || c === 0x7d || c === 0x5d || c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) break;
    i++;
  }
  return i;
}

/**
 * The [start, end) span of the value of top-level member `key` in the JSON object `text`,
 * or null when absent. The key is compared by its raw text (keys we look for have no escapes).
 * With duplicate keys the LAST one wins, as in `JSON.parse`: otherwise a peer could have us
 * inspect one value and forward another.
 */
export function topLevelMemberSpan(text: string, key: string): [number, number] | null {
  let i = skipWhitespace(text, 0);
  if (text.charCodeAt(i) !== 0x7b) return null;
  i++;
  let found: [number, number] | null = null;
  for (;;) {
    i = skipWhitespace(text, i);
    if (text.charCodeAt(i) === 0x7d) return found;
    if (text.charCodeAt(i) !== QUOTE) return null;
    const keyEnd = skipString(text, i);
    // Compared in place, with no quoted copy of `key` made per call.
    const isWanted = keyEnd - i === key.length + 2 && text.startsWith(key, i + 1);
    i = skipWhitespace(text, keyEnd);
    if (text.charCodeAt(i) !== 0x3a) return null;
    i = skipWhitespace(text, i + 1);
    const valueEnd = skipValue(text, i);
    if (isWanted) found = [i, valueEnd];
    i = skipWhitespace(text, valueEnd);
    if (text.charCodeAt(i) === 0x7d) return found;
    if (text.charCodeAt(i) !== 0x2c) return null;
    i++;
  }
}

/** Where the text of an upstream's response travels with its parsed result. */
const RAW_RESPONSE = Symbol('mcp-warden.rawResponse');

/** The response's line, and its `result` member's text once something asked for it. */
interface RawResponse {
  /** The text the response was parsed from (for a large line, perhaps without its long strings). */
  readonly line: string;
  /** The line's bytes, when it was large. */
  readonly large: LargeLine | undefined;
  /** undefined: not looked for yet; null: the line has no `result` member. */
  result: RawResult | null | undefined;
}

/** A result's text exactly as the upstream sent it, and its bytes when the line was large. */
export interface RawResult {
  readonly text: string;
  readonly bytes: Buffer | undefined;
}

/** The result of a large line whose long strings were never decoded: its text only on demand. */
class UndecodedResult implements RawResult {
  private decoded: string | undefined;
  constructor(readonly bytes: Buffer) {}
  get text(): string {
    return (this.decoded ??= this.bytes.toString('utf8'));
  }
}

/**
 * Remembers the line a result was parsed from. Non-enumerable, so a spread copy (what every
 * repair makes) does not carry it: only the untouched object can be forwarded as text.
 */
export function attachRawResponse(result: object, line: string, large?: LargeLine): void {
  const raw: RawResponse = { line, large, result: undefined };
  // One descriptor for every response, rather than one made per call.
  ATTACH.value = raw;
  Object.defineProperty(result, RAW_RESPONSE, ATTACH);
  ATTACH.value = undefined;
}

const ATTACH: PropertyDescriptor = { value: undefined, enumerable: false };

/**
 * The exact text (and, for a large line, bytes) of `result` as the upstream sent it, when
 * `result` is that untouched object. Found once per response, however many ask (the router to
 * forward it, audit to size it).
 */
export function rawResult(result: object): RawResult | undefined {
  const raw = (result as { [RAW_RESPONSE]?: RawResponse })[RAW_RESPONSE];
  if (raw === undefined) return undefined;
  if (raw.result === undefined) {
    const { line, large } = raw;
    const span = topLevelMemberSpan(line, 'result');
    // Cut from bytes that are not valid UTF-8 by offsets measured in their decoded text, the
    // result could come out cut wrong: it is then written from the parsed value instead.
    if (span === null || large?.offsetsExact === false) raw.result = null;
    else if (large === undefined) raw.result = { text: line.slice(span[0], span[1]), bytes: undefined };
    else {
      const body = large.bytes.subarray(large.byteOffset(span[0]), large.byteOffset(span[1]));
      raw.result = large.whole
        ? { text: line.slice(span[0], span[1]), bytes: body }
        : new UndecodedResult(body);
    }
  }
  return raw.result ?? undefined;
}
