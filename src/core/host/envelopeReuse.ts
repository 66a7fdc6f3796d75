import { parseMessage, type Params, type ParseOutcome } from '../protocol/jsonRpc.js';
import { META, shareEnvelopeMeta } from '../protocol/envelope.js';

/**
 * A 2026-07-28 host puts the same envelope (protocol version, capabilities, identity) in the
 * `_meta` of every request, byte for byte. Parsing it each time was most of what a modern
 * request cost more than a legacy one: three long keys interned, three more objects, and the
 * garbage. So the host's lines are parsed with the envelope's text cut out when it is exactly
 * the text of the last envelope learned, and that envelope's value (frozen, so sharing it is
 * safe) is put in its place: the message is the value `JSON.parse` of the whole line gives.
 *
 * Where the text was cut is checked, not assumed: it is replaced by a marker value, and the
 * value is reused only when the marker came out as `params._meta` and the line did not hold the
 * marker's text itself. Anything else (the text inside the arguments, a second `_meta`, a parse
 * error) is parsed again from the whole line, as it would have been.
 */

/**
 * What the envelope's member starts with after its opening quote, as hosts that serialise
 * compactly write it: searched for without the quote, which every line is full of.
 */
const MEMBER_START = `_meta":{${JSON.stringify(META.protocolVersion).slice(0, 5)}`;
/** What replaces the envelope's text: a string no envelope is. */
const MARKER = '\u0000';
const MARKER_TEXT = '"\\u0000"';
/**
 * Any text that parses to MARKER holds this (JSON has no other way to write U+0000 in a string);
 * it starts with a backslash, rare in a line, so the search is quick.
 */
const MARKER_SEARCH = '\\u0000"';
/** After this many lines whose envelope differed from the one learned, a new one is learned. */
const RELEARN_AFTER = 16;

export class EnvelopeReuse {
  /** The text of the envelope member (`"_meta":{…}`) last learned; undefined before one. */
  private memberText: string | undefined;
  /** Its value, frozen throughout. */
  private meta: Params | undefined;
  private misses = 0;
  /**
   * How many characters followed the envelope's text in the last line it was found in by a
   * search; -1 before one. A host writes its lines alike (the envelope last in the params, so
   * followed by `}}`), so the next line's envelope is first looked for at that distance from
   * its end, which spares searching the line for it.
   */
  private after = -1;

  /** Parses one line of the host's as `parseMessage` does. */
  readonly parse = (line: string): ParseOutcome => {
    const member = this.memberText;
    if (member !== undefined) {
      const at = this.find(line, member);
      if (at >= 0) {
        const reused = this.reuse(line, at, member.length);
        if (reused !== undefined) return reused;
      }
    }
    const parsed = parseMessage(line);
    if (parsed.ok && (member === undefined || this.misses >= RELEARN_AFTER)) {
      this.misses = 0;
      this.learn(line, parsed.message);
    }
    return parsed;
  };

  /**
   * Where the learned envelope's text starts in `line`: at the distance from the end it had in
   * the last line, or else where its member starts; -1 when it is not there (counted as a miss
   * when the line has an envelope of other text). Wherever it is found, `reuse` checks that it
   * was the params' `_meta`.
   */
  private find(line: string, member: string): number {
    // Compared as a slice: `startsWith(member, position)` was measured at about 8k instructions
    // more per line than this, in V8 11.3 (Node 20).
    const guess = line.length - this.after - member.length;
    if (this.after >= 0 && guess > 0 && line.slice(guess, guess + member.length) === member) return guess;
    const at = line.indexOf(MEMBER_START) - 1;
    if (at < 0) return -1;
    if (line.slice(at, at + member.length) !== member) {
      this.misses++;
      return -1;
    }
    this.after = line.length - at - member.length;
    return at;
  }

  private reuse(line: string, at: number, length: number): ParseOutcome | undefined {
    const cut = `${line.slice(0, at)}"_meta":${MARKER_TEXT}${line.slice(at + length)}`;
    const parsed = parseMessage(cut);
    if (!parsed.ok) return undefined;
    const params = (parsed.message as { params?: Params }).params;
    if (params?._meta !== MARKER || line.includes(MARKER_SEARCH)) return undefined;
    params._meta = this.meta;
    return parsed;
  }

  /** Takes the envelope of a message just parsed as the one to look for next. */
  private learn(line: string, message: object): void {
    const meta = (message as { params?: Params }).params?._meta;
    if (typeof meta !== 'object' || meta === null || !Object.hasOwn(meta, META.protocolVersion)) return;
    const at = line.indexOf(MEMBER_START) - 1;
    if (at < 0) return;
    const member = `"_meta":${JSON.stringify(meta)}`;
    // Only text that is exactly what the value serialises to: then that text parses to it.
    if (line.slice(at, at + member.length) !== member) return;
    this.memberText = member;
    this.after = line.length - at - member.length;
    this.meta = shareEnvelopeMeta(deepFreeze(meta as Params));
  }
}

function deepFreeze<T extends object>(value: T): T {
  for (const key of Object.keys(value)) {
    const member = (value as Record<string, unknown>)[key];
    if (typeof member === 'object' && member !== null) deepFreeze(member);
  }
  return Object.freeze(value);
}
