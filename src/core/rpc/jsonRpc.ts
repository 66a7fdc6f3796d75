/**
 * JSON-RPC 2.0 message shapes as the router handles them, and the one place messages are
 * parsed from and serialized to text.
 *
 * These are deliberately looser than the SDK's zod-derived types: the hot path does not
 * schema-parse every message (ARCHITECTURE "Parse once, validate where it pays"); methods whose
 * payload we must trust are validated where they are handled.
 */
import { topLevelMemberSpan } from '../../lib/json/memberSpan.js';

/**
 * A numeric id whose text `JSON.parse` would change (an integer beyond 2^53). Kept as text so it
 * goes back to the peer exactly as sent (FIELD_NOTES "Traps").
 */
export class RawId {
  constructor(readonly raw: string) {}
  toString(): string {
    return this.raw;
  }
}

export type RequestId = string | number | RawId;
export type Params = Record<string, unknown>;

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: RequestId;
  method: string;
  params?: Params;
}

export interface JsonRpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: Params;
}

export interface JsonRpcSuccess {
  jsonrpc: '2.0';
  id: RequestId;
  result: Record<string, unknown>;
}

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export interface JsonRpcFailure {
  jsonrpc: '2.0';
  id: RequestId | null;
  error: JsonRpcErrorObject;
}

export type JsonRpcResponse = JsonRpcSuccess | JsonRpcFailure;
export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse;

/** Standard JSON-RPC and MCP error codes we emit. */
export const RpcErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** The SDK's RequestTimeout; used when a routed non-tool request times out. */
  RequestTimeout: -32001,
} as const;

export function isRequest(m: JsonRpcMessage): m is JsonRpcRequest {
  return 'method' in m && 'id' in m && m.id !== undefined;
}
export function isNotification(m: JsonRpcMessage): m is JsonRpcNotification {
  return 'method' in m && !('id' in m && m.id !== undefined);
}
export function isResponse(m: JsonRpcMessage): m is JsonRpcResponse {
  return !('method' in m) && ('result' in m || 'error' in m);
}

export type ParseOutcome = { ok: true; message: JsonRpcMessage } | { ok: false; reason: string };

/**
 * Parses one line. Never throws: a line that is not a JSON-RPC 2.0 message is reported as a
 * reason, so the caller can log and skip it (upstreams that print junk must not break anything).
 */
export function parseMessage(line: string): ParseOutcome {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    // JSON-RPC batches were removed from MCP in 2025-06-18; we do not accept them.
    return {
      ok: false,
      reason: Array.isArray(value) ? 'JSON-RPC batches are not supported' : 'not an object',
    };
  }
  const m = value as Record<string, unknown>;
  if (m.jsonrpc !== '2.0') return { ok: false, reason: 'missing "jsonrpc": "2.0"' };
  const id = m.id;
  if (typeof id === 'number' && !Number.isSafeInteger(id) && Number.isInteger(id)) {
    const span = topLevelMemberSpan(line, 'id');
    if (span !== null) m.id = new RawId(line.slice(span[0], span[1]));
  } else if (id !== undefined && id !== null && typeof id !== 'string' && typeof id !== 'number') {
    return { ok: false, reason: 'id must be a string or a number' };
  }
  if ('method' in m) {
    if (typeof m.method !== 'string') return { ok: false, reason: 'method must be a string' };
    if (
      m.params !== undefined &&
      (typeof m.params !== 'object' || m.params === null || Array.isArray(m.params))
    )
      return { ok: false, reason: 'params must be an object' };
  } else if (!('result' in m) && !('error' in m)) {
    return { ok: false, reason: 'neither a request, a notification nor a response' };
  }
  return { ok: true, message: m as unknown as JsonRpcMessage };
}

const RAW_ID_PLACEHOLDER = '\u0000warden:raw-id\u0000';
const RAW_ID_TOKEN = JSON.stringify(RAW_ID_PLACEHOLDER);

/** Serializes one message to a line (without the newline). */
export function serializeMessage(message: JsonRpcMessage): string {
  const id = 'id' in message ? message.id : undefined;
  if (!(id instanceof RawId)) return JSON.stringify(message);
  // The id goes first so the placeholder we replace is the one we put there, whatever the payload holds.
  const { id: _id, ...rest } = message as unknown as { id: RawId } & Record<string, unknown>;
  const text = JSON.stringify({ id: RAW_ID_PLACEHOLDER, ...rest });
  return `{"id":${id.raw}${text.slice(1 + '"id":'.length + RAW_ID_TOKEN.length)}`;
}

/** Turns a RawId back into a plain id for places that need a Map key. */
export function idKey(id: RequestId): string | number {
  // The NUL keeps it apart from any string id a peer could send.
  return id instanceof RawId ? `\u0000raw:${id.raw}` : id;
}

/** The text of an id as it goes on the wire. */
export function idText(id: RequestId): string {
  return id instanceof RawId ? id.raw : JSON.stringify(id);
}

/** A success response around a result that is already JSON text (cached lists, unchanged results). */
export function serializeRawResult(id: RequestId, resultJson: string): string {
  return `${rawResultHead(id)}${resultJson}}`;
}

/** What goes before a result's own JSON in a response (after it: `}`). */
export function rawResultHead(id: RequestId): string {
  return `{"jsonrpc":"2.0","id":${idText(id)},"result":`;
}
