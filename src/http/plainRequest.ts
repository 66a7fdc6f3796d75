import type { IncomingMessage } from 'node:http';
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';

/** Over HTTP the host's ids are parsed JSON: strings or numbers. */
export type RequestId = string | number;

/** A POST's one request, in the shape `isPlainRequest` admits. */
export interface PlainRequest {
  readonly jsonrpc: '2.0';
  readonly id: RequestId;
  readonly method: string;
  readonly params?: Record<string, unknown>;
}

const REQUEST_KEYS: ReadonlySet<string> = new Set(['jsonrpc', 'id', 'method', 'params']);

/**
 * Whether this POST is one request a session's transport answers itself (see SessionTransport):
 * headers the SDK's transport would accept as they are (Accept naming both JSON and SSE, a JSON
 * Content-Type, a protocol version it supports or none), and a body its schema would take
 * unchanged (a JSON-RPC request with only the four members, an integer or string id, params an
 * object whose `_meta` holds a valid progress token or none, and no task member the schema would
 * rewrite). Anything else goes to the SDK, which refuses or takes it as it always did.
 */
export function isPlainRequest(req: IncomingMessage, body: unknown): body is PlainRequest {
  const { accept, 'content-type': type, 'mcp-protocol-version': version } = req.headers;
  if (accept === undefined || !accept.includes('application/json') || !accept.includes('text/event-stream'))
    return false;
  if (type === undefined || !JSON_TYPE.test(type)) return false;
  if (
    version !== undefined &&
    (typeof version !== 'string' || !SUPPORTED_PROTOCOL_VERSIONS.includes(version))
  )
    return false;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  const { jsonrpc, id, method, params } = body as Record<string, unknown>;
  if (jsonrpc !== '2.0' || typeof method !== 'string' || method === 'initialize') return false;
  if (typeof id !== 'string' && !Number.isSafeInteger(id)) return false;
  for (const key in body) if (!REQUEST_KEYS.has(key)) return false;
  if (params === undefined) return true;
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return false;
  const meta = (params as { _meta?: unknown })._meta;
  if (meta === undefined) return true;
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) return false;
  const token = (meta as { progressToken?: unknown }).progressToken;
  if (token !== undefined && typeof token !== 'string' && !Number.isSafeInteger(token)) return false;
  return !(RELATED_TASK in meta);
}

/** A Content-Type whose media type is JSON, whatever its parameters. */
const JSON_TYPE = /^application\/json\s*(;|$)/i;
const RELATED_TASK = 'io.modelcontextprotocol/related-task';
