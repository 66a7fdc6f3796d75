import type { ByteParts } from '../../lib/byteParts.js';
import type { JsonRpcSuccess, RequestId } from '../protocol/jsonRpc.js';
import type { RawResult } from './rawResult.js';

/**
 * A response whose result is already JSON text: an upstream's result forwarded untouched, or a
 * merged list encoded once per change. A transport that writes text writes `text` (or `bytes`,
 * for a large one) as it is; any other sends `toMessage()`. Only the host connection's peer
 * makes these (rpc/peer.ts, `IncomingRequest.respond`), so exactly one place decides when bytes
 * are written instead of a value.
 */
export class EncodedResult {
  constructor(
    readonly id: RequestId,
    /** The result's JSON text, and its UTF-8 bytes when the caller already has them (large results). */
    private readonly source: RawResult,
    /** The parsed result (or how to make it), for transports that send values. */
    private readonly value: Record<string, unknown> | (() => Record<string, unknown>),
    /** How `value` is put for the request's protocol revision, when `source` was put so too. */
    private readonly shape?: { result(result: Record<string, unknown>): Record<string, unknown> },
  ) {}

  /** The result's JSON text; for a large result read from bytes, decoded only when asked for. */
  get text(): string {
    return this.source.text;
  }

  get bytes(): ByteParts | undefined {
    return this.source.bytes;
  }

  toMessage(): JsonRpcSuccess {
    const { value, shape } = this;
    const result = typeof value === 'function' ? value() : value;
    return { jsonrpc: '2.0', id: this.id, result: shape === undefined ? result : shape.result(result) };
  }
}
