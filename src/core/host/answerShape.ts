import { ByteParts } from '../../lib/byteParts.js';
import type { Params, JsonRpcErrorObject } from '../protocol/jsonRpc.js';
import type { AnswerShape } from '../rpc/peer.js';
import type { Outcome } from '../rpc/outcome.js';
import type { RawResult } from '../rpc/rawResult.js';
import { META, type CacheHint, type Envelope } from '../protocol/envelope.js';

/** What a modern request's answers carry besides their result. */
export interface ModernAnswerOptions {
  readonly envelope: Envelope;
  readonly serverInfo: { readonly name: string; readonly version: string };
  /**
   * The caching hints for a cacheable result, asked for when the answer goes out (the upstreams
   * may have connected since the request came); undefined for a method whose results are not.
   */
  readonly cache: (() => CacheHint) | undefined;
  /** `resultTypeAndServer(serverInfo)`, made once by the caller for every request. */
  readonly fieldsText?: string;
  /** Runs once when the request is done (answered, failed or cancelled). */
  readonly onSettled?: () => void;
}

/** The error code of an unknown resource before the stateless revision, and in it. */
const OLD_RESOURCE_NOT_FOUND = -32002;
const INVALID_PARAMS = -32602;

/**
 * The answers to one request of the stateless revision: every result says its `resultType` and
 * names the server in `_meta`, cacheable ones carry `ttlMs` and `cacheScope`, and an unknown
 * resource is -32602 (the revision retired -32002). A result that arrived as text keeps its
 * bytes: the fields are written in front of the upstream's own, so the fast path of a
 * pass-through result survives the change of era.
 */
export class ModernAnswer implements AnswerShape {
  private done = false;

  constructor(private readonly options: ModernAnswerOptions) {}

  get envelope(): Envelope {
    return this.options.envelope;
  }

  result(result: Record<string, unknown>): Record<string, unknown> {
    const shaped: Record<string, unknown> = { ...result };
    const resultType = typeof result.resultType === 'string' ? result.resultType : 'complete';
    shaped.resultType = resultType;
    const own = result._meta;
    shaped._meta = {
      ...(typeof own === 'object' && own !== null ? (own as Params) : {}),
      [META.serverInfo]: this.options.serverInfo,
    };
    // Interim (input_required) results are not cacheable, and carry no hints.
    const cache = resultType === 'complete' ? this.options.cache?.() : undefined;
    if (cache !== undefined) {
      if (typeof shaped.ttlMs !== 'number' || shaped.ttlMs < 0) shaped.ttlMs = cache.ttlMs;
      if (shaped.cacheScope !== 'public' && shaped.cacheScope !== 'private')
        shaped.cacheScope = cache.cacheScope;
    }
    return shaped;
  }

  text(raw: RawResult, parsed: object | undefined): RawResult | undefined {
    const { cache } = this.options;
    // A result with fields of the same names must be merged as a value. `parsed` is the value
    // of the upstream's own JSON text, whose members are all its own and none undefined, so a
    // read says what Object.hasOwn would, for much less on the path every answer takes.
    if (parsed !== undefined) {
      const own = parsed as Params;
      if (own._meta !== undefined || own.resultType !== undefined) return undefined;
      if (cache !== undefined && (own.ttlMs !== undefined || own.cacheScope !== undefined)) return undefined;
    }
    const fields = this.options.fieldsText ?? resultTypeAndServer(this.options.serverInfo);
    // Without caching hints the opening is the same for every answer of the process: made once.
    const opening = cache === undefined ? openingOf(fields) : openingFor(withHints(fields, cache()));
    const { bytes } = raw;
    if (bytes !== undefined) {
      if (bytes.at(0) !== 0x7b) return undefined;
      const start = emptyObjectBytes(bytes) ? opening.empty : opening.members;
      const joined = joinedBytes(bytes, start);
      // The text only when asked for, and from the original's (never decoding the new bytes).
      return {
        bytes: joined,
        get text() {
          return `${start}${raw.text.slice(1)}`;
        },
      };
    }
    const { text } = raw;
    if (text.charCodeAt(0) !== 0x7b) return undefined;
    return {
      text: `${emptyObjectText(text) ? opening.empty : opening.members}${text.slice(1)}`,
      bytes: undefined,
    };
  }

  error(error: JsonRpcErrorObject): JsonRpcErrorObject {
    return error.code === OLD_RESOURCE_NOT_FOUND ? { ...error, code: INVALID_PARAMS } : error;
  }

  settled(): void {
    if (this.done) return;
    this.done = true;
    this.options.onSettled?.();
  }
}

/** The members every complete modern result starts with, as JSON text without braces. */
export function resultTypeAndServer(serverInfo: { readonly name: string; readonly version: string }): string {
  return `"resultType":"complete","_meta":${JSON.stringify({ [META.serverInfo]: serverInfo })}`;
}

/**
 * What is written in place of a result's opening brace: the brace and the added members, with
 * the comma that parts them from the result's own (`members`) or without it, for an empty
 * result (`empty`).
 */
interface Opening {
  readonly members: string;
  readonly empty: string;
}

function openingFor(fields: string): Opening {
  return { empty: `{${fields}`, members: `{${fields},` };
}

/** The members of a cacheable result, with its caching hints after them. */
function withHints(fields: string, hint: CacheHint): string {
  return `${fields},"ttlMs":${hint.ttlMs},"cacheScope":${JSON.stringify(hint.cacheScope)}`;
}

/** The last opening made for results without hints, and its fields: a process's answers share one. */
let lastOpening: Opening = openingFor('');
let lastFields = '';

function openingOf(fields: string): Opening {
  if (fields !== lastFields) {
    lastOpening = { empty: flat(`{${fields}`), members: flat(`{${fields},`) };
    lastFields = fields;
  }
  return lastOpening;
}

/**
 * `text` as one contiguous string. A string built by joining is a tree of its parts, walked
 * again each time a line that holds it is written out; decoded afresh it is one piece.
 */
function flat(text: string): string {
  return Buffer.from(text, 'utf8').toString('utf8');
}

/**
 * The bytes of a large result with `start` in place of its opening brace: views of the
 * original's parts behind one new part, so no megabytes are copied per request.
 */
function joinedBytes(bytes: ByteParts, start: string): ByteParts {
  return new ByteParts([Buffer.from(start, 'utf8'), ...bytes.range(1, bytes.length).buffers]);
}

/** Whether an object's text is `{}` (with any white space). */
function emptyObjectText(text: string): boolean {
  for (let i = 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
    return c === 0x7d;
  }
  return false;
}

/** Whether the bytes of an object's text are `{}` (with any white space). */
function emptyObjectBytes(bytes: ByteParts): boolean {
  for (let i = 1; i < bytes.length; i++) {
    const b = bytes.at(i);
    if (b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09) continue;
    return b === 0x7d;
  }
  return false;
}

/** The envelope of a modern host request, when `origin` is one. */
export function envelopeOf(origin: object | undefined): Envelope | undefined {
  const shape = (origin as { shape?: unknown } | undefined)?.shape;
  return shape instanceof ModernAnswer ? shape.envelope : undefined;
}

/** The members of a 2026-07-28 result that say it is not final (an InputRequiredResult's). */
const INTERIM_FIELDS: readonly string[] = ['resultType', 'inputRequests', 'requestState'];

/**
 * A handshake-era server's answer, as a modern host gets it: final. That revision has no result
 * types, so one that writes `resultType` (an InputRequiredResult, say) is not passed on as one:
 * the host would show its questions unlabelled and answer them past the gateway's policy and
 * audit trail, which only a server's real requests go through.
 */
export function asComplete(outcome: Outcome): Outcome {
  const result = outcome.result as Params;
  // Any of them, not only `resultType`: a complete result must not carry questions or a state
  // either. The result is parsed JSON, whose members are its own and never undefined.
  if (
    result.resultType === undefined &&
    result.inputRequests === undefined &&
    result.requestState === undefined
  )
    return outcome;
  const complete: Params = {};
  for (const key of Object.keys(result)) if (!INTERIM_FIELDS.includes(key)) complete[key] = result[key];
  return outcome.changed(complete);
}
