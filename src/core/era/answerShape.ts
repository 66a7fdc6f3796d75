import { ByteParts } from '../../lib/byteParts.js';
import type { Params, JsonRpcErrorObject } from '../rpc/jsonRpc.js';
import type { AnswerShape } from '../rpc/peer.js';
import type { RawResult } from '../rpc/rawResult.js';
import { META, type Envelope } from './envelope.js';

/** How long a result may be cached, and by whom (the revision's caching hints). */
export interface CacheHint {
  readonly ttlMs: number;
  readonly cacheScope: 'public' | 'private';
}

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
  /** The fields added in front of a result's own members, as JSON text (without braces). */
  private prefixText: string | undefined;

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
    // A result with fields of the same names must be merged as a value.
    if (parsed !== undefined && (Object.hasOwn(parsed, '_meta') || Object.hasOwn(parsed, 'resultType')))
      return undefined;
    if (parsed !== undefined && this.options.cache !== undefined)
      if (Object.hasOwn(parsed, 'ttlMs') || Object.hasOwn(parsed, 'cacheScope')) return undefined;
    const prefix = (this.prefixText ??= this.prefix());
    const { bytes } = raw;
    if (bytes !== undefined) {
      if (bytes.at(0) !== 0x7b) return undefined;
      const start = `{${prefix}${emptyObjectBytes(bytes) ? '' : ','}`;
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
    return { text: `{${prefix}${emptyObjectText(text) ? '' : ','}${text.slice(1)}`, bytes: undefined };
  }

  error(error: JsonRpcErrorObject): JsonRpcErrorObject {
    return error.code === OLD_RESOURCE_NOT_FOUND ? { ...error, code: INVALID_PARAMS } : error;
  }

  settled(): void {
    if (this.done) return;
    this.done = true;
    this.options.onSettled?.();
  }

  private prefix(): string {
    const fields = this.options.fieldsText ?? resultTypeAndServer(this.options.serverInfo);
    const cache = this.options.cache?.();
    return cache === undefined
      ? fields
      : `${fields},"ttlMs":${cache.ttlMs},"cacheScope":${JSON.stringify(cache.cacheScope)}`;
  }
}

/** The members every complete modern result starts with, as JSON text without braces. */
export function resultTypeAndServer(serverInfo: { readonly name: string; readonly version: string }): string {
  return `"resultType":"complete","_meta":${JSON.stringify({ [META.serverInfo]: serverInfo })}`;
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
