import { recordJson } from './chain.js';
import type { Redactor } from './redact.js';

/*
 * The JSON text of an audit event's own fields, redacted, as they appear in its record line
 * between the writer's `"ts"` and `"writer"` members.
 *
 * The definition is `recordJson(prepare(event))` (`prepare` below): a plain object of the
 * event's fields, redacted, given to `JSON.stringify`. That costs an object per record and, on
 * Node 20, about a microsecond of `JSON.stringify` per call record, most of it spent writing
 * the same names again and again. `members` writes the same text member by member instead,
 * taking the text of what repeats from record to record (field names, the names of things, a
 * small object such as `client` or `decision` equal to the previous one) from what it wrote
 * before, and the rest (arguments, numbers, errors) fresh. Whatever it is not sure to write
 * exactly as `JSON.stringify` would (a bigint, a `toJSON` method, a `toJSON` field, a value
 * whose serialisation throws) goes the general way, for the whole record: the bytes, and so
 * the hashes, never depend on which way a record went (test/unit/auditRecordFields.test.ts).
 */

/** Fields the writer sets itself (ChainFields), and one JSON would read as a prototype. */
const RESERVED_FIELDS = new Set(['seq', 'ts', 'host', 'writer', 'prev', 'hash', '__proto__']);

/** String fields that name things and repeat across records: their text is remembered. */
const REPEATED_FIELDS = new Set(['type', 'session', 'tool', 'server', 'upstreamTool', 'outcome']);

/** Fields redacted with the full rule (keys and patterns); all others get the pattern rule only. */
function fullRule(key: string): boolean {
  return key === 'args' || key === 'structured';
}

/** Bounds of the cache of repeated strings and names (their JSON text). */
const REPEATED_CACHE_CHARS = 256;
const REPEATED_CACHE_SIZE = 4096;

/** Field lists whose names are remembered: every kind of record the gateway writes in a burst. */
const SHAPES_KEPT = 8;

/** A flat object written before (see #flatJson): its members and its text. */
interface FlatMemo {
  readonly keys: readonly string[];
  readonly values: readonly unknown[];
  readonly json: string;
}

export class RecordFields {
  readonly #redactor: Redactor | undefined;
  /** REPEATED_FIELDS values → their JSON text, redacted. */
  #repeated = new Map<string, string>();
  /** Per field, the last flat object written under it (`client`, `decision`). */
  #flat = new Map<string, FlatMemo>();

  /**
   * `redactor`: applied to every field, `args` and `structured` with the full rule, the others
   * with the pattern rule only. Absent: fields are written as given.
   */
  constructor(redactor?: Redactor) {
    this.#redactor = redactor;
  }

  /** The fields of a record as `JSON.stringify` is given them: redacted, writer fields left out. */
  prepare(event: object): Record<string, unknown> {
    const redactor = this.#redactor;
    const fields: Record<string, unknown> = {};
    const source = event as Record<string, unknown>;
    for (const key of Object.keys(source)) {
      if (RESERVED_FIELDS.has(key)) continue;
      const value = source[key];
      if (redactor === undefined) fields[key] = value;
      else if (fullRule(key)) fields[key] = redactor.redactValue(value);
      else if (typeof value === 'string' && REPEATED_FIELDS.has(key)) fields[key] = this.#repeatedText(value);
      else fields[key] = redactor.redactStrings(value);
    }
    return fields;
  }

  /**
   * `recordJson(prepare(event))` without its braces (`"type":"call",...`), empty for an event
   * without fields. Never throws.
   */
  members(event: object): string {
    let fast: string | undefined;
    try {
      fast = this.#members(event as Record<string, unknown>);
    } catch {
      // A getter or toJSON that throws: the general way maps it to text.
    }
    return fast ?? recordJson(this.prepare(event)).slice(1, -1);
  }

  /** The fast way; undefined where it cannot be sure to match `JSON.stringify`. */
  #members(source: Record<string, unknown>): string | undefined {
    const redactor = this.#redactor;
    let out = '';
    const keys = Object.keys(source);
    const names = this.#namesOf(keys);
    if (names === undefined) return undefined;
    for (let i = 0; i < keys.length; i++) {
      const name = names[i];
      if (name === undefined) continue; // a reserved field
      const key = keys[i]!;
      const value = source[key];
      let json: string | undefined;
      switch (typeof value) {
        case 'string':
          json = REPEATED_FIELDS.has(key)
            ? this.#repeatedJson(value)
            : JSON.stringify(redactor === undefined ? value : redactor.redactText(value));
          break;
        case 'number':
          // What JSON.stringify writes: the shortest round-trip text, `null` for NaN and ±Infinity.
          json = Number.isFinite(value) ? `${value}` : 'null';
          break;
        case 'boolean':
          json = value ? 'true' : 'false';
          break;
        case 'object':
          json = value === null ? 'null' : this.#objectJson(key, value);
          if (json === undefined) return undefined;
          break;
        case 'bigint':
          return undefined; // JSON.stringify throws; the general way writes its digits
        default:
          continue; // undefined, functions and symbols: JSON leaves the member out
      }
      out += out === '' ? name + json : `,${name}${json}`;
    }
    return out;
  }

  /** An object member's text; undefined to take the general way. */
  #objectJson(key: string, value: object): string | undefined {
    const redactor = this.#redactor;
    if (redactor !== undefined && !fullRule(key)) {
      const memo = this.#flatJson(key, value, redactor);
      if (memo !== undefined) return memo;
    }
    const args = key === 'args';
    if (args && value === this.#lastArgs) return this.#lastArgsJson;
    const redacted =
      redactor === undefined
        ? value
        : fullRule(key)
          ? redactor.redactValue(value)
          : redactor.redactStrings(value);
    // JSON.stringify would call it with the member's name, which a lone JSON.stringify does not.
    if (typeof (redacted as { toJSON?: unknown } | null)?.toJSON === 'function') return undefined;
    const json = JSON.stringify(redacted);
    if (args && typeof json === 'string') {
      this.#lastArgs = value;
      this.#lastArgsJson = json;
    }
    return json;
  }

  /**
   * The last `args` object written and its text. A call's `call_start` and `call` records are
   * given the very same arguments object, which nothing changes on the way (the pipeline's
   * contract for `RoutedMessage.arguments`): the second record takes the text of the first
   * instead of redacting and serialising the arguments again.
   */
  #lastArgs: object | undefined;
  #lastArgsJson = '';

  /**
   * The text of a plain object whose members are all strings, numbers, booleans or null, when
   * it has the same members as the last one written under `key`: `client` and `decision` are
   * the same from call to call, and redacting and writing them anew was a good part of a
   * record's cost. Their redaction (pattern rule) depends on those members alone, so equal
   * members give equal text. Remembered: the last such object per field (never `args`).
   */
  #flatJson(key: string, value: object, redactor: Redactor): string | undefined {
    if (Array.isArray(value)) {
      // `repairs`, usually empty; an array with a `toJSON` of its own is left to the general way.
      return value.length === 0 && (value as { toJSON?: unknown }).toJSON === undefined ? '[]' : undefined;
    }
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) return undefined;
    const keys = Object.keys(value);
    const values: unknown[] = [];
    for (let i = 0; i < keys.length; i++) {
      const item = (value as Record<string, unknown>)[keys[i]!];
      if (
        typeof item === 'object'
          ? item !== null
          : typeof item !== 'string' && typeof item !== 'number' && typeof item !== 'boolean'
      )
        return undefined;
      values.push(item);
    }
    const memo = this.#flat.get(key);
    if (memo !== undefined && sameMembers(memo, keys, values)) return memo.json;
    if (keys.includes('toJSON')) return undefined; // a data member, but rare enough to not reason about
    const json = JSON.stringify(redactor.redactStrings(value));
    if (this.#flat.size < REPEATED_CACHE_SIZE || this.#flat.has(key))
      this.#flat.set(key, { keys, values, json });
    return json;
  }

  /**
   * `"name":` for each of `keys`, undefined for a reserved one; undefined for all when one is
   * `toJSON` (JSON.stringify would call a `toJSON` field of the record object itself). Records
   * of a kind have the same fields in the same order (one object literal makes them), and a
   * call's records alternate between two kinds (`call_start`, `call`), so the answers for the
   * last few field lists are kept and compared first: the names are usually the very same
   * strings. Remembering only the last list missed on every record of a call (measured).
   */
  #namesOf(keys: readonly string[]): readonly (string | undefined)[] | undefined {
    const shapes = this.#shapes;
    for (let s = 0; s < shapes.length; s++) {
      const shape = shapes[s]!;
      if (sameKeys(shape.keys, keys)) return shape.names;
    }
    if (keys.includes('toJSON')) return undefined;
    const names = keys.map((key) => (RESERVED_FIELDS.has(key) ? undefined : `${JSON.stringify(key)}:`));
    if (shapes.length >= SHAPES_KEPT) shapes.pop();
    shapes.unshift({ keys, names });
    return names;
  }

  /** The field lists of recent records and their names, newest first (at most SHAPES_KEPT). */
  #shapes: { readonly keys: readonly string[]; readonly names: readonly (string | undefined)[] }[] = [];

  /** The JSON text of a REPEATED_FIELDS value, redacted with the pattern rule. */
  #repeatedJson(text: string): string {
    if (text.length > REPEATED_CACHE_CHARS) return JSON.stringify(this.#repeatedText(text));
    let json = this.#repeated.get(text);
    if (json === undefined) {
      json = JSON.stringify(this.#repeatedText(text));
      if (this.#repeated.size >= REPEATED_CACHE_SIZE) this.#repeated.clear();
      this.#repeated.set(text, json);
    }
    return json;
  }

  #repeatedText(text: string): string {
    return this.#redactor === undefined ? text : this.#redactor.redactText(text);
  }
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function sameMembers(memo: FlatMemo, keys: readonly string[], values: readonly unknown[]): boolean {
  if (memo.keys.length !== keys.length) return false;
  for (let i = 0; i < keys.length; i++) {
    if (memo.keys[i] !== keys[i] || !Object.is(memo.values[i], values[i])) return false;
  }
  return true;
}
