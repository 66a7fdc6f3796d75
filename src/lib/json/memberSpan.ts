/**
 * A minimal scanner over the text of one JSON object, used where `JSON.parse` loses what we
 * must keep: integer ids above 2^53 (parse rounds them) and, on the hot path, the exact text of
 * a member we forward unchanged. Assumes the text already parsed as JSON; it only finds spans.
 */

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

/** How most peers begin a response: `{"jsonrpc":"2.0","id":`. */
const RESPONSE_START = '{"jsonrpc":"2.0","id":';
const RESULT_KEY = ',"result":';

/**
 * `topLevelMemberSpan(text, 'result')` of a response line, with a shortcut for the way nearly
 * every peer writes one: `{"jsonrpc":"2.0","id":ID,"result":VALUE}`, no whitespace between
 * members. Reading a string character by character is what the scan costs, and the members before
 * `result` were a good part of it; in that form they are compared as one prefix. The value itself
 * is still scanned, and a closing brace must follow it, so a later member (another `result`, say)
 * sends the line the general way: the span is always the one the general scan finds.
 */
export function responseResultSpan(text: string): [number, number] | null {
  if (text.startsWith(RESPONSE_START)) {
    const idEnd = skipValue(text, RESPONSE_START.length);
    if (text.startsWith(RESULT_KEY, idEnd)) {
      const start = idEnd + RESULT_KEY.length;
      const end = skipValue(text, start);
      if (end > start && text.charCodeAt(skipWhitespace(text, end)) === 0x7d) return [start, end];
    }
  }
  return topLevelMemberSpan(text, 'result');
}

/**
 * The usual start of a response up to its result's value: an integer id or a string id without
 * escapes, no whitespace. Sticky: matched at `lastIndex` only.
 */
const BARE_RESPONSE_START = /\{"jsonrpc":"2\.0","id":(?:-?\d+|"[^"\\]*"),"result":/y;

/**
 * Where a member after the result would show in its text. A key written with escapes that reads
 * as one of the three names needs `\u` (no other escape gives a letter).
 */
const RESPONSE_KEY_TEXT = /"(?:id|jsonrpc|result)"|\\u/g;

/**
 * `responseResultSpan` for a response whose parsed value has no members but `jsonrpc`, `id` and
 * `result` (the caller checked the parsed object; the text alone cannot show it). The usual form,
 * `{"jsonrpc":"2.0","id":ID,"result":VALUE}`, needs no scan of the value then: a member after
 * it would have to be one of the three again (JSON.parse keeps the last of a repeated key), and
 * its key would show in the text after `"result":` as `"id"`, `"jsonrpc"`, `"result"` or with a
 * `\u` escape. Both the form and the search for those keys are left to the regular expression
 * engine, which reads a string far faster than a loop over its characters does (a line cut from
 * the text of a whole read costs such a loop some 50 instructions a character). When the search
 * finds any, or the value does not fill the line up to its closing brace, the line goes the
 * general way.
 */
export function bareResponseResultSpan(text: string): [number, number] | null {
  BARE_RESPONSE_START.lastIndex = 0;
  if (BARE_RESPONSE_START.test(text)) {
    const start = BARE_RESPONSE_START.lastIndex;
    const last = text.length - 1;
    if (
      last > start &&
      text.charCodeAt(last) === 0x7d &&
      !isWhitespace(text.charCodeAt(last - 1)) &&
      !isWhitespace(text.charCodeAt(start))
    ) {
      RESPONSE_KEY_TEXT.lastIndex = start;
      if (!RESPONSE_KEY_TEXT.test(text)) return [start, last];
    }
  }
  return responseResultSpan(text);
}

function isWhitespace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}
