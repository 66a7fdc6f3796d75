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
 *
 * The two records every tool call writes (`call_start` and `call`) have one shape each, made by
 * one object literal in the audit stage: for those, `members` reads the known members by name
 * and writes them in their known order, where any other record is walked key by key. Reading
 * members by a key that varies costs a lookup in a shared cache each time; by name, the load is
 * compiled for the one shape.
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

/** Bound of the arguments' texts kept between a call's first and last record (see #startArgs). */
const ARGS_KEPT = 1024;

/** Field lists whose names are remembered: every kind of record the gateway writes in a burst. */
const SHAPES_KEPT = 8;

/** The members of a `call_start` record, in the order the audit stage writes them. */
export const CALL_START_KEYS: readonly string[] = [
  'type',
  'session',
  'principal',
  'call',
  'method',
  'tool',
  'server',
  'upstreamTool',
  'args',
];

/** The members of a `call` record, in the order the audit stage writes them. */
export const CALL_KEYS: readonly string[] = [
  'type',
  'session',
  'principal',
  'client',
  'hostEra',
  'upstreamEra',
  'tool',
  'server',
  'upstreamTool',
  'args',
  'decision',
  'pin',
  'outcome',
  'ms',
  'repairs',
  'resultBytes',
  'error',
  'structured',
  'call',
  'trace',
  'flow',
  'continuedVia',
  'takenOverBy',
  'leaseWaitMs',
];

/** Which writer a field list gets: the general walk, or one of the fixed ones. */
type Writer = 'general' | 'call_start' | 'call';

/** What a field list's records are written with: the names of its fields and its writer. */
interface Shape {
  readonly keys: readonly string[];
  /** `"name":` per field; undefined for a reserved one. */
  readonly names: readonly (string | undefined)[];
  /** Per field, whether its string value is one of REPEATED_FIELDS (text remembered). */
  readonly repeated: readonly boolean[];
  readonly writer: Writer;
}

/**
 * Thrown by a member writer that cannot be sure to write what `JSON.stringify` would: `members`
 * then takes the general way for the whole record.
 */
const NOT_SURE = new Error('the general way writes this record');

/** The record members a fixed writer reads by name. */
type Members = Readonly<Record<string, unknown>>;

/** A flat object written before (see #flatJson): its members and its text. */
interface FlatMemo {
  readonly keys: readonly string[];
  readonly values: readonly unknown[];
  readonly json: string;
  /** The object itself when it is frozen with data members only: it cannot change. */
  readonly fixed: object | undefined;
}

export class RecordFields {
  readonly #redactor: Redactor | undefined;
  /** REPEATED_FIELDS values → their JSON text, redacted. */
  #repeated = new Map<string, string>();
  /** Per field, the last flat object written under it (`client`, `decision`). */
  #flat = new Map<string, FlatMemo>();
  /**
   * The text of each frozen flat object written (see #flatJson), for as long as it lives: a
   * listener's principals take turns, one per connection, so the last one per field would miss
   * on nearly every record of a busy team gateway (measured: 64 principals, one redaction and
   * one stringify per record).
   */
  #frozenText = new WeakMap<object, string>();

  /**
   * `redactor`: applied to every field, `args` and `structured` with the full rule, the others
   * with the pattern rule only. Absent: fields are written as given.
   */
  constructor(redactor?: Redactor) {
    this.#redactor = redactor;
    // Redacted like any other value of `type`: a pattern of the user's may match even these.
    this.#callStartType = `"type":${this.#repeatedJson('call_start')}`;
    this.#callType = `"type":${this.#repeatedJson('call')}`;
  }

  /** `"type":"call_start"` and `"type":"call"`, as redaction leaves them. */
  readonly #callStartType: string;
  readonly #callType: string;

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
      // A getter or toJSON that throws, or a value only the general way writes right (NOT_SURE):
      // the general way maps it to text.
    }
    return fast ?? recordJson(this.prepare(event)).slice(1, -1);
  }

  /** The fast way; undefined where it cannot be sure to match `JSON.stringify` (or throws NOT_SURE). */
  #members(source: Record<string, unknown>): string | undefined {
    const keys = Object.keys(source);
    const shape = this.#shapeOf(keys);
    if (shape === undefined) return undefined;
    switch (shape.writer) {
      case 'call_start':
        if (source['type'] === 'call_start') return this.#callStart(source);
        break;
      case 'call':
        if (source['type'] === 'call') return this.#call(source);
        break;
    }
    const { names, repeated } = shape;
    let out = '';
    for (let i = 0; i < keys.length; i++) {
      const name = names[i];
      if (name === undefined) continue; // a reserved field
      const key = keys[i]!;
      const json = this.#valueJson(key, source[key], repeated[i]!);
      if (json !== undefined) out += out === '' ? name + json : `,${name}${json}`;
    }
    return out;
  }

  /** The members of a `call_start` record with CALL_START_KEYS, `type` being `call_start`. */
  #callStart(e: Members): string {
    return (
      this.#callStartType +
      this.#lastMember(this.#session, e['session']) +
      this.#member(',"principal":', 'principal', e['principal'], false) +
      this.#member(',"call":', 'call', e['call'], false) +
      this.#member(',"method":', 'method', e['method'], false) +
      this.#lastMember(this.#tool, e['tool']) +
      this.#lastMember(this.#server, e['server']) +
      this.#lastMember(this.#upstreamTool, e['upstreamTool']) +
      this.#startArgs(e['args'])
    );
  }

  /** The members of a `call` record with CALL_KEYS, `type` being `call`. */
  #call(e: Members): string {
    return (
      this.#callType +
      this.#lastMember(this.#session, e['session']) +
      this.#member(',"principal":', 'principal', e['principal'], false) +
      this.#member(',"client":', 'client', e['client'], false) +
      this.#member(',"hostEra":', 'hostEra', e['hostEra'], false) +
      this.#member(',"upstreamEra":', 'upstreamEra', e['upstreamEra'], false) +
      this.#lastMember(this.#tool, e['tool']) +
      this.#lastMember(this.#server, e['server']) +
      this.#lastMember(this.#upstreamTool, e['upstreamTool']) +
      this.#member(',"args":', 'args', e['args'], false) +
      this.#member(',"decision":', 'decision', e['decision'], false) +
      this.#member(',"pin":', 'pin', e['pin'], false) +
      this.#lastMember(this.#outcome, e['outcome']) +
      this.#member(',"ms":', 'ms', e['ms'], false) +
      this.#member(',"repairs":', 'repairs', e['repairs'], false) +
      this.#member(',"resultBytes":', 'resultBytes', e['resultBytes'], false) +
      this.#member(',"error":', 'error', e['error'], false) +
      this.#member(',"structured":', 'structured', e['structured'], false) +
      this.#member(',"call":', 'call', e['call'], false) +
      this.#member(',"trace":', 'trace', e['trace'], false) +
      this.#member(',"flow":', 'flow', e['flow'], false) +
      this.#member(',"continuedVia":', 'continuedVia', e['continuedVia'], false) +
      this.#member(',"takenOverBy":', 'takenOverBy', e['takenOverBy'], false) +
      this.#member(',"leaseWaitMs":', 'leaseWaitMs', e['leaseWaitMs'], false)
    );
  }

  /*
   * The repeated fields of the two call records, each with the text of the last string written
   * under it: from call to call these are the very same strings (the gateway's session, a
   * tool's names, `ok`), so the member's text is found by one comparison rather than a lookup
   * in the cache of repeated strings.
   */
  readonly #session = new LastMember(',"session":', 'session');
  readonly #tool = new LastMember(',"tool":', 'tool');
  readonly #server = new LastMember(',"server":', 'server');
  readonly #upstreamTool = new LastMember(',"upstreamTool":', 'upstreamTool');
  readonly #outcome = new LastMember(',"outcome":', 'outcome');

  /** `#member` of a REPEATED_FIELDS field, remembering the last string written under it. */
  #lastMember(last: LastMember, value: unknown): string {
    if (typeof value !== 'string') return this.#member(last.name, last.key, value, true);
    if (value !== last.value) {
      last.text = this.#member(last.name, last.key, value, true);
      last.value = value;
    }
    return last.text;
  }

  /** `name` and the value's text, or nothing for a value JSON leaves out. */
  #member(name: string, key: string, value: unknown, repeated: boolean): string {
    // Most of a call record's optional members are absent: left out with one comparison, before
    // the `typeof` switch (which V8 runs as a call to a builtin, measured).
    if (value === undefined) return '';
    const json = this.#valueJson(key, value, repeated);
    return json === undefined ? '' : name + json;
  }

  /**
   * A member's value as JSON.stringify writes it in the record, redacted; undefined for a value
   * it leaves out (undefined, a function, a symbol). Throws NOT_SURE for what only the general
   * way writes right. `repeated`: the field is one of REPEATED_FIELDS.
   */
  #valueJson(key: string, value: unknown, repeated: boolean): string | undefined {
    switch (typeof value) {
      case 'string': {
        if (repeated) return this.#repeatedJson(value);
        const redactor = this.#redactor;
        return JSON.stringify(redactor === undefined ? value : redactor.redactText(value));
      }
      case 'number':
        // What JSON.stringify writes: the shortest round-trip text, `null` for NaN and ±Infinity.
        return Number.isFinite(value) ? `${value}` : 'null';
      case 'boolean':
        return value ? 'true' : 'false';
      case 'object': {
        if (value === null) return 'null';
        const json = this.#objectJson(key, value);
        if (json === undefined) throw NOT_SURE;
        return json;
      }
      case 'bigint':
        throw NOT_SURE; // JSON.stringify throws; the general way writes its digits
      default:
        return undefined; // undefined, functions and symbols: JSON leaves the member out
    }
  }

  /** An object member's text; undefined to take the general way. */
  #objectJson(key: string, value: object): string | undefined {
    const redactor = this.#redactor;
    if (redactor !== undefined && !fullRule(key)) {
      const memo = this.#flatJson(key, value, redactor);
      if (memo !== undefined) return memo;
    }
    if (key === 'args') {
      // Remembered by the call's call_start; this is the call's last record, which takes it.
      const known = this.#argsText.get(value);
      if (known !== undefined) {
        this.#argsText.delete(value);
        return known;
      }
    }
    const redacted =
      redactor === undefined
        ? value
        : fullRule(key)
          ? redactor.redactValue(value)
          : redactor.redactStrings(value);
    // JSON.stringify would call it with the member's name, which a lone JSON.stringify does not.
    if (typeof (redacted as { toJSON?: unknown } | null)?.toJSON === 'function') return undefined;
    return JSON.stringify(redacted);
  }

  /**
   * The `args` member of a call_start, its text remembered for the call's last record (`call`
   * or `request`). A call's records are given the very same arguments object, which nothing
   * changes on the way (the pipeline's contract for `RoutedMessage.arguments`): the last record
   * takes the text of the first instead of redacting and serialising the arguments again. Kept
   * per arguments object, for every call in flight: with many calls in flight, other calls'
   * records come between a call's two.
   */
  #startArgs(value: unknown): string {
    if (typeof value !== 'object' || value === null) return this.#member(',"args":', 'args', value, false);
    let json = this.#argsText.get(value);
    if (json === undefined) {
      json = this.#valueJson('args', value, false);
      if (json === undefined) return '';
      // Calls whose last record never came (the gateway stopped) must not pile up.
      if (this.#argsText.size >= ARGS_KEPT) this.#argsText.clear();
      this.#argsText.set(value, json);
    }
    return `,"args":${json}`;
  }

  /** Arguments objects of calls in flight → their text in the records (see #startArgs). */
  readonly #argsText = new Map<object, string>();

  /**
   * The text of a plain object whose members are all strings, numbers, booleans or null, when
   * it has the same members as the last one written under `key`: `client` and `decision` are
   * the same from call to call, and redacting and writing them anew was a good part of a
   * record's cost. Their redaction (pattern rule) depends on those members alone, so equal
   * members give equal text. Remembered: the last such object per field (never `args`). The
   * very same frozen object (a principal, a host's identity) is not even compared: a frozen
   * object's data members cannot change.
   */
  #flatJson(key: string, value: object, redactor: Redactor): string | undefined {
    if (Array.isArray(value)) {
      // `repairs`, usually empty; an array with a `toJSON` of its own is left to the general way.
      return value.length === 0 && (value as { toJSON?: unknown }).toJSON === undefined ? '[]' : undefined;
    }
    const memo = this.#flat.get(key);
    if (memo !== undefined && memo.fixed === value) return memo.json;
    const known = this.#frozenText.get(value);
    if (known !== undefined) return known;
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) return undefined;
    const keys = Object.keys(value);
    const record = value as Record<string, unknown>;
    // The remembered values are all primitives: equal to them, this object's are too.
    if (memo !== undefined && sameMembers(memo, keys, record)) return memo.json;
    const values: unknown[] = [];
    for (let i = 0; i < keys.length; i++) {
      const item = record[keys[i]!];
      if (
        typeof item === 'object'
          ? item !== null
          : typeof item !== 'string' && typeof item !== 'number' && typeof item !== 'boolean'
      )
        return undefined;
      values.push(item);
    }
    if (keys.includes('toJSON')) return undefined; // a data member, but rare enough to not reason about
    const json = JSON.stringify(redactor.redactStrings(value));
    const fixed = frozenData(value, keys);
    if (fixed) this.#frozenText.set(value, json);
    if (this.#flat.size < REPEATED_CACHE_SIZE || this.#flat.has(key))
      this.#flat.set(key, { keys, values, json, fixed: fixed ? value : undefined });
    return json;
  }

  /**
   * The shape of a record with fields `keys`; undefined when one is `toJSON` (JSON.stringify
   * would call a `toJSON` field of the record object itself). Records of a kind have the same
   * fields in the same order (one object literal makes them), and a call's records alternate
   * between two kinds (`call_start`, `call`), so the last few shapes are kept and compared
   * first: their keys are usually the very same strings. Remembering only the last one missed on
   * every record of a call (measured).
   */
  #shapeOf(keys: readonly string[]): Shape | undefined {
    const shapes = this.#shapes;
    for (let s = 0; s < shapes.length; s++) {
      const shape = shapes[s]!;
      if (sameKeys(shape.keys, keys)) return shape;
    }
    if (keys.includes('toJSON')) return undefined;
    const shape: Shape = {
      keys,
      names: keys.map((key) => (RESERVED_FIELDS.has(key) ? undefined : `${JSON.stringify(key)}:`)),
      repeated: keys.map((key) => REPEATED_FIELDS.has(key)),
      writer: sameKeys(keys, CALL_KEYS) ? 'call' : sameKeys(keys, CALL_START_KEYS) ? 'call_start' : 'general',
    };
    if (shapes.length >= SHAPES_KEPT) shapes.pop();
    shapes.unshift(shape);
    return shape;
  }

  /** The shapes of recent records, newest first (at most SHAPES_KEPT). */
  #shapes: Shape[] = [];

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

/** One repeated field of the call records and the member written for the last string under it. */
class LastMember {
  value: string | undefined = undefined;
  text = '';
  constructor(
    /** `,"key":` */
    readonly name: string,
    readonly key: string,
  ) {}
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function sameMembers(memo: FlatMemo, keys: readonly string[], record: Record<string, unknown>): boolean {
  if (memo.keys.length !== keys.length) return false;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    if (memo.keys[i] !== key || !Object.is(memo.values[i], record[key])) return false;
  }
  return true;
}

/** Frozen, and every member a value rather than a getter: what JSON reads of it never changes. */
function frozenData(value: object, keys: readonly string[]): boolean {
  if (!Object.isFrozen(value)) return false;
  for (const key of keys) {
    if (!('value' in Object.getOwnPropertyDescriptor(value, key)!)) return false;
  }
  return true;
}
