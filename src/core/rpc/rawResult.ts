/**
 * The exact text of a result as the upstream sent it, carried with its parsed value so that an
 * untouched result can be forwarded byte for byte.
 */

import type { ByteParts } from '../../lib/byteParts.js';
import { bareResponseResultSpan, responseResultSpan } from '../../lib/json/memberSpan.js';

/**
 * A large line: its bytes, and the text the gateway parses in its place (transports/largeLine.ts
 * makes them).
 */
export interface LargeLine {
  /** In the parts the line arrived in (never joined unless a reader needs them contiguous). */
  readonly bytes: ByteParts;
  /** The line's text, or with its long strings replaced by placeholders (see `whole`). */
  readonly text: string;
  /** True when `text` is the whole line, decoded. */
  readonly whole: boolean;
  /**
   * False when the line is not valid UTF-8: each bad byte was decoded as U+FFFD, so offsets in
   * `text` no longer tell offsets in `bytes`, and nothing may be cut from the bytes by them.
   */
  readonly offsetsExact: boolean;
  /** Offset in `bytes` of character `index` of `text`, where `index` is not inside a placeholder. */
  byteOffset(index: number): number;
  /** Puts the long strings back into the value parsed from `text` (each decoded when first read). */
  restore(parsed: unknown): void;
}

/** Where the text of an upstream's response travels with its parsed result. */
const RAW_RESPONSE = Symbol('mcp-warden.rawResponse');

/** The response's line, and its `result` member's text once something asked for it. */
export class RawResponse {
  /** undefined: not looked for yet; null: the line has no `result` member. */
  private found: RawResult | null | undefined = undefined;
  /**
   * The parsed response had no members but `jsonrpc`, `id` and `result` when it arrived: its
   * result is then found the short way (see `bareResponseResultSpan`). Learnt here, from the
   * value as parsed, not when the result is asked for.
   */
  private readonly bare: boolean;

  constructor(
    /** The text the response was parsed from (for a large line, perhaps without its long strings). */
    private readonly line: string,
    /** The line's bytes, when it was large. */
    private readonly large: LargeLine | undefined,
    /** The value parsed from `line`, as it was parsed; unknown when left out. */
    parsed?: object,
  ) {
    this.bare = parsed !== undefined && hasOnlyResponseMembers(parsed);
  }

  /**
   * The text (and, for a large line, bytes) of the response's `result` member exactly as the
   * upstream sent it. Found once per response, however many ask (the router to forward it,
   * audit to size it).
   */
  result(): RawResult | undefined {
    if (this.found === undefined) {
      const { line, large } = this;
      const span = this.bare && large === undefined ? bareResponseResultSpan(line) : responseResultSpan(line);
      // Cut from bytes that are not valid UTF-8 by offsets measured in their decoded text, the
      // result could come out cut wrong: it is then written from the parsed value instead.
      if (span === null || large?.offsetsExact === false) this.found = null;
      else if (large === undefined) this.found = { text: line.slice(span[0], span[1]), bytes: undefined };
      else {
        const body = large.bytes.range(large.byteOffset(span[0]), large.byteOffset(span[1]));
        this.found = large.whole
          ? { text: line.slice(span[0], span[1]), bytes: body }
          : new UndecodedResult(body);
      }
    }
    return this.found ?? undefined;
  }
}

/**
 * Whether a parsed value has three members at most: a response whose text begins with `jsonrpc`,
 * `id` and `result` has then no other. Counted with `for...in`, which makes no array of the keys;
 * an inherited enumerable key counts too, so the answer is never wrongly yes.
 */
function hasOnlyResponseMembers(response: object): boolean {
  let members = 0;
  for (const _key in response) if (++members > 3) return false;
  return true;
}

/**
 * A result's text exactly as the upstream sent it, and its bytes when the line was large (in the
 * parts they arrived in).
 */
export interface RawResult {
  readonly text: string;
  readonly bytes: ByteParts | undefined;
}

/** The result of a large line whose long strings were never decoded: its text only on demand. */
class UndecodedResult implements RawResult {
  private decoded: string | undefined;
  constructor(readonly bytes: ByteParts) {}
  get text(): string {
    return (this.decoded ??= this.bytes.toString('utf8'));
  }
}

/**
 * Remembers the line a result was parsed from. Non-enumerable, so a spread copy (what every
 * repair makes) does not carry it: only the untouched object can be forwarded as text.
 */
export function attachRawResponse(result: object, line: string, large?: LargeLine): void {
  const raw = new RawResponse(line, large);
  // One descriptor for every response, rather than one made per call.
  ATTACH.value = raw;
  Object.defineProperty(result, RAW_RESPONSE, ATTACH);
  ATTACH.value = undefined;
}

const ATTACH: PropertyDescriptor = { value: undefined, enumerable: false };

/**
 * The exact text (and, for a large line, bytes) of `result` as the upstream sent it, when
 * `result` is that untouched object.
 */
export function rawResult(result: object): RawResult | undefined {
  return (result as { [RAW_RESPONSE]?: RawResponse })[RAW_RESPONSE]?.result();
}
